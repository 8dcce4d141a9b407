-- title: Concepts by type
-- description: How many concepts of each type, by where the type came from (a bar chart: x = type, y = concepts, colour = type_source): frontmatter, folder (inferred for a vault's note from its folder, such as People/ for Person), log (a log.md) or (none).
select coalesce(type, '(no type)') as type, coalesce(type_source, '(none)') as type_source, count(*) as concepts
from concepts where not is_index
group by 1, 2 order by concepts desc, type, type_source
