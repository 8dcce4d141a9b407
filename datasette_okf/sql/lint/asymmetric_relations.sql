-- title: Asymmetric relations
-- description: A relation from A to B with no relation back from B to A. Facts are read from the subject's side, so write both directions in the same edit (member_of / has_member): add the reverse on the object's concept.
-- level: warning
select a.src as concept, a.predicate, a.dst from edges a
where a.kind = 'relation' and a.dst is not null and a.dst != a.src and :folder in ('', okf_folder(a.src))
  -- by the edges out of a.dst (`+`: not every edge into a hub; 100k synthetic notes 3.2 -> 1.0 s)
  and not exists (select 1 from edges b where b.kind = 'relation' and b.src = a.dst and +b.dst = a.src)
order by a.src, a.predicate
