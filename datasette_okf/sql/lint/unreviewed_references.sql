-- title: Unreviewed references
-- description: Notes under references/ that no concept cites in sources[].resource. Cite them where they are used, or remove them. The concepts already derived from references/ are the canned query okf_rebuild_candidates.
-- level: warning
select id as concept, path from concepts
where not is_index and (path like 'references/%' or path like '%/references/%')
  and not exists (select 1 from edges where edges.dst = concepts.id and edges.predicate = 'sources.resource')
  and :folder in ('', okf_folder(id))
order by id
