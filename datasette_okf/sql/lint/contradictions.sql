-- title: Contradictions
-- description: One subject and one single-valued predicate with different objects from different sources. Decide which is true and fix or supersede the other; predicates that legitimately take several objects are listed in the plugin setting multi_valued_predicates.
-- level: warning
with facts as (
  select src, predicate, coalesce(dst, object_literal) as object, source_id
  from edges where kind = 'relation'
),
multi_valued(predicate) as (select value from json_each('{multi_valued}'))
select a.src as concept, a.predicate, a.object as one_object, a.source_id as one_source,
  b.object as other_object, b.source_id as other_source
from facts a join facts b
  on a.src = b.src and a.predicate = b.predicate and a.object < b.object
where a.predicate not in (select predicate from multi_valued)
  and coalesce(a.source_id, '') != coalesce(b.source_id, '')
  and :folder in ('', okf_folder(a.src))
order by a.src, a.predicate
