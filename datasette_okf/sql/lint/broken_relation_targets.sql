-- title: Broken relation targets
-- description: Typed relations whose object path does not resolve to a concept. The fact is kept (OKF §6.1); write the target concept or correct the path.
-- level: error
select src as concept, file, line, target, problem from link_issues
where kind = 'relation' and :folder in ('', okf_folder(src))
order by file, line
