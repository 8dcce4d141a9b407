-- title: Dead links
-- description: Links whose target does not exist in the bundle (or would leave it). Write the missing note, fix the path, or unlink it; OKF §6.1 tolerates dead links as knowledge not yet written, so this is a to-do list, not an error.
-- level: warning
select src, file, line, target, kind, problem from link_issues
where problem in ('dead', 'missing-file', 'escapes-bundle') and kind != 'relation' and kind != 'supersedes'
order by file, line
