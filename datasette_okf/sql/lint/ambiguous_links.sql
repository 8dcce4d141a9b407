-- title: Ambiguous links
-- description: Wikilinks that match several notes. Nothing was guessed; write the link with a folder path ([[folder/Note]]) or rename one of the candidates.
-- level: warning
select src, file, line, target, candidates from link_issues
where problem = 'ambiguous'
order by file, line
