-- title: Concepts by type
-- description: How many concepts of each type (a bar chart: x = type, y = concepts).
select coalesce(type, '(no type)') as type, count(*) as concepts
from concepts where not is_index
group by 1 order by concepts desc
