-- title: Missing attachments
-- description: Wikilinks and embeds of a file that is not a note (an image, a PDF, …) that does not exist in the bundle (link_issues.problem 'missing-file'): an Obsidian vault's attachment folder that was not copied, or a renamed file. Copy the file into the bundle or fix the name.
-- level: warning
select src as concept, file, line, target, kind, problem from link_issues
where problem = 'missing-file' and :folder in ('', okf_folder(src))
order by file, line
