with

events as (

    select * from {{ ref('int_events_deduplicated') }}

),

interactions as (

    select * from events
    where record_type = 'interaction'

),

final as (

    -- Trajectory order: event_at, then batch, then position in the source file (as `sessions`).
    select
        store || '|' || session_id as event_times_id,
        store,
        session_id,
        list(event_at order by event_at, batch_id, source_row) as event_times

    from interactions
    group by store, session_id

)

select * from final
