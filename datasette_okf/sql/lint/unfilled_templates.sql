-- title: Unfilled templates
-- description: Notes made of lines that recur in many notes (a template's placeholders) with fewer than four words of their own, or with no text at all: made from a template and never written. They are never seeds of a context (concepts.is_stub); write them, or delete them.
-- level: warning
select id as concept, path, title, description from concepts
where is_stub and not is_index and :folder in ('', okf_folder(id))
order by id
