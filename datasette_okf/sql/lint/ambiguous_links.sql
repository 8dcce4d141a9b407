-- title: Ambiguous links
-- description: Links that match several notes (link_issues.problem 'ambiguous'): a wikilink whose name or alias several notes share, or a path that only differs from several files in case. Nothing was guessed; write the link with a folder path ([[folder/Note]]) or rename one of the candidates.
-- level: warning
select src as concept, file, line, target, kind, problem, candidates from link_issues
where problem = 'ambiguous' and :folder in ('', okf_folder(src))
order by file, line
