-- title: Orphans
-- description: Concepts no other note, index, relation or property points to. Link them from a related note or an index.md, or delete them if they are obsolete.
-- level: warning
select id as concept, path, title from concepts
where not is_index and path != 'log.md' and path not like '%/log.md'  -- a log is read, not linked to
  and :folder in ('', okf_folder(id))
  and not exists (select 1 from edges where edges.dst = concepts.id and edges.src != concepts.id
                  and edges.kind != 'sequence')  -- the build's own next-in-series edges are not links
order by id
