-- title: Links leaving the bundle
-- description: Relative paths that climb out of the bundle's folder (../ past its root; link_issues.problem 'escapes-bundle'). Paths are bundle-relative (OKF §6.1, §6.2), so the target is never read: link inside the bundle (/folder/note.md), or use a URL for something outside it.
-- level: warning
select src as concept, file, line, target, kind, problem from link_issues
where problem = 'escapes-bundle' and :folder in ('', okf_folder(src))
order by file, line
