-- title: Edges by kind
-- description: Links, wikilinks, properties, relations, mentions and supersession edges (a bar chart: x = kind, y = edges).
select kind, count(*) as edges from edges group by kind order by edges desc
