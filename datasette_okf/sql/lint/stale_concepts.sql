-- title: Stale concepts
-- description: Concepts past their stale_after instant (OKF §5.5). Re-verify them and move stale_after forward, or mark them deprecated; retrieval flags them as possibly out of date.
-- level: warning
select id as concept, title, stale_after, trust_tier from concepts
where stale_after is not null and stale_after <= strftime('%Y-%m-%dT%H:%M:%SZ', 'now')
  and :folder in ('', okf_folder(id))
order by stale_after
