-- title: Asymmetric supersession
-- description: A is superseded_by B but B does not say it supersedes A, or the other way round. Add the matching field on the other concept.
-- level: warning
select a.src as concept, a.predicate, a.dst from edges a
where a.kind = 'supersedes' and a.dst is not null and :folder in ('', okf_folder(a.src))
  and not exists (
    select 1 from edges b where b.kind = 'supersedes' and b.src = a.dst and b.dst = a.src
      and b.predicate = case a.predicate when 'superseded_by' then 'supersedes' else 'superseded_by' end)
order by a.src
