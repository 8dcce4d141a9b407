-- title: Concepts without a type in their frontmatter
-- description: OKF §4.1 and §11 require a non-empty `type` in every concept's frontmatter; consumers route and filter on it. type_source says where the build found one instead: 'folder' (a vault's note, typed by its folder) or nothing. Add `type:` (Person, Place, Session, …) to the frontmatter. An error under the okf lint profile; a warning under vault, where notes without frontmatter are normal.
-- level: error
-- vault-level: warning
select id as concept, path, bundle, type, type_source from concepts
where not is_index and (type_source is not 'frontmatter' or type is null or trim(type) = '')  -- non-empty: OKF §11
  and path != 'log.md' and path not like '%/log.md'  -- a reserved file, not a concept document (OKF §3.1)
  and :folder in ('', okf_folder(id))
order by id
