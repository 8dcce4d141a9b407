-- title: Dangling supersession
-- description: superseded_by or supersedes pointing at a concept that does not exist. Fix the path, or remove the field if the successor was never written.
-- level: error
select src as concept, file, line, target, problem from link_issues
where kind = 'supersedes' and :folder in ('', okf_folder(src))
order by file, line
