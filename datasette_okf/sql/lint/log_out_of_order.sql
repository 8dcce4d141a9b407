-- title: log.md out of order
-- description: log.md entries must sit under ISO 8601 YYYY-MM-DD headings, newest first (OKF §9). Fix the heading or move the entry. The culprit (concept) is the log.md note itself, one row per misplaced entry. An error under the okf lint profile (OKF §11 makes log.md's structure part of conformance); a warning under vault, where log.md is an ordinary note's name.
-- level: error
-- vault-level: warning
with entries as (
  select bundle, file, line, date, text,
    lag(date) over (partition by bundle, file order by line) as previous
  from log_entries
)
select bundle || '/' || substr(file, 1, length(file) - 3) as concept,  -- the log note's id: bundle/path without .md
  bundle, file, line, date, previous, text
from entries
where (date is null
    or date not glob '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]'
    or (previous glob '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]' and date > previous))
  and :folder in ('', okf_folder(bundle || '/' || file))
order by bundle, file, line
