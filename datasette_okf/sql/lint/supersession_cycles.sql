-- title: Supersession cycles
-- description: Following superseded_by comes back to where it started. Break the loop: one of these concepts must be the current one. Each cycle is listed once, from its first id.
-- level: error
with recursive successor(src, dst) as (
  select src, dst from edges where kind = 'supersedes' and predicate = 'superseded_by' and dst is not null
  union
  select dst, src from edges where kind = 'supersedes' and predicate = 'supersedes' and dst is not null
),
walk(start, node, lowest, depth, path) as (
  select src, dst, min(src, dst), 1, src || ' -> ' || dst from successor
  union all
  select walk.start, successor.dst, min(walk.lowest, successor.dst), walk.depth + 1,
    walk.path || ' -> ' || successor.dst
  from walk join successor on successor.src = walk.node
  where walk.depth < 32 and walk.node != walk.start
)
select start as concept, path from walk
where node = start and start = lowest and :folder in ('', okf_folder(start))
order by concept
