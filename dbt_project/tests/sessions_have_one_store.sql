{{ config(severity = 'warn') }}

-- Soft expectation: all rows of a session come from one store (sessions.store takes the smallest).
select
    session_id,
    count(distinct store) as n_stores

from {{ ref('int_events_deduplicated') }}
group by session_id
having count(distinct store) > 1
