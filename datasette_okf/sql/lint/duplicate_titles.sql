-- title: Duplicate titles
-- description: Several concepts in one bundle share a title, so a title in a question cannot tell them apart. Rename one, or merge them. The culprit is the group, not a concept: `concepts` lists its ids, and the lint summary counts groups for the whole database, not by folder.
-- level: warning
select bundle, lower(title) as title, group_concat(id, ', ') as concepts, count(*) as count
from concepts where not is_index
group by bundle, lower(title) having count(*) > 1
order by bundle, title
