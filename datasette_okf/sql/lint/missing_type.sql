-- title: Concepts without a type
-- description: OKF §11 requires a non-empty `type` in every concept's frontmatter. Add one (Person, Place, Session, …); consumers route and filter on it.
-- level: error
select id, path, bundle from concepts
where not is_index and (type is null or trim(type) = '')
order by id
