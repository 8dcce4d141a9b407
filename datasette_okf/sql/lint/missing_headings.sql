-- title: Links to missing headings
-- description: Links with a #heading whose target note has no such heading. Fix the anchor or restore the heading; an LLM following the link would land on the wrong section.
-- level: warning
select edges.src as concept, edges.dst, edges.anchor, edges.line from edges
where edges.dst is not null and edges.anchor is not null and edges.anchor not like '^%'
  and :folder in ('', okf_folder(edges.src))
  and not exists (
    select 1 from headings where headings.concept_id = edges.dst and headings.slug = okf_slug(edges.anchor))
order by edges.src, edges.line
