{{ config(severity = 'warn') }}

-- Soft expectation from the ingest: a row has a label exactly when it names where it came from.
select
    event_id,
    actor,
    label_source

from {{ ref('stg_events') }}
where (actor = 'unknown') <> (label_source = 'none')
