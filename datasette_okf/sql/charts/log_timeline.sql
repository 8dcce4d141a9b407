-- title: log.md timeline
-- description: Entries per day in every log.md (a line or bar chart: x = date, y = entries).
select date, count(*) as entries from log_entries
where date glob '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]'
group by date order by date
