-- title: Rebuild candidates
-- description: Ingest-derived concepts: their sources cite at least one references/ document, so re-running ingest over references/ would recreate them. Concept pages (filed-back syntheses) are out of scope by design. Check the human verification before deleting anything. The other direction, references/ files no concept cites yet, is the lint check unreviewed_references; `datasette okf rebuild-candidates` shows both.
select
  concepts.id,
  concepts.path,
  concepts.type,
  (select json_group_array(value ->> 'resource') from json_each(concepts.sources)
   where ltrim(ltrim(value ->> 'resource', '.'), '/') like 'references/%') as references_cited,
  json_extract(concepts.frontmatter, '$.verified.by') as verified_by,
  concepts.generated_at
from concepts
where not concepts.is_index
  and coalesce(concepts.type, '') != 'Concept'
  and exists (
    select 1 from json_each(concepts.sources)
    where ltrim(ltrim(value ->> 'resource', '.'), '/') like 'references/%'
  )
order by concepts.id
