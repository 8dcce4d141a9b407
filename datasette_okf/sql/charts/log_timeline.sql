-- title: Timeline
-- description: Dated entries per day (a line or bar chart: x = date, y = entries, colour = source). A bundle with a dated log.md charts its entries (source log.md, OKF §9); a bundle without one, such as a vault, charts its notes by every frontmatter field holding an ISO date (source: the field's name, such as sessiondate) and its relations by their date (source: relation date).
with logged as (  -- bundles whose log.md has dated entries
  select distinct bundle from log_entries where date glob '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]'
),
dated(date, source) as (
  select date, 'log.md' from log_entries
  where date glob '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]'
  union all
  select substr(field.value, 1, 10), field.key from concepts, json_each(concepts.frontmatter) as field
  where concepts.bundle not in (select bundle from logged)
    and field.type = 'text' and field.value glob '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]*'
  union all
  select substr(edges.date, 1, 10), 'relation date' from edges join concepts on concepts.id = edges.src
  where concepts.bundle not in (select bundle from logged)
    and edges.date glob '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]*'
)
select date, source, count(*) as entries from dated
group by date, source order by date, source
