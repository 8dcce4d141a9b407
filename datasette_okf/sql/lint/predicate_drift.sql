-- title: Predicate drift
-- description: One predicate written several ways (invested_in, invested-in, investedIn). Pick one spelling and rename the others so the vocabulary does not fork. The culprit is the predicate, not a concept: the lint summary counts it for the whole database, not by folder.
-- level: warning
with spellings as (
  select distinct predicate,
    lower(replace(replace(replace(predicate, '-', ''), '_', ''), ' ', '')) as normal
  from edges where kind in ('relation', 'property')
)
select normal, group_concat(predicate, ', ') as spellings, count(*) as variants
from (select * from spellings order by predicate) group by normal having count(*) > 1
order by normal
