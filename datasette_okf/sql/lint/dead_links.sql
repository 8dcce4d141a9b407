-- title: Dead note links
-- description: Links to a note that does not exist in the bundle (link_issues.problem 'dead'), from the body, a frontmatter property, a relation or a supersession field: relation objects and supersession targets among them are also listed, at error level, by Broken relation targets and Dangling supersession. Write the missing note, fix the path, or unlink it; OKF §6.1 tolerates broken links as knowledge not yet written, so this is a to-do list, not an error.
-- level: warning
select src as concept, file, line, target, kind, problem from link_issues
where problem = 'dead' and :folder in ('', okf_folder(src))
order by file, line
