with

events as (

    select * from {{ ref('int_events_deduplicated') }}

),

interactions as (

    select * from events
    where record_type = 'interaction'

),

final as (

    -- Trajectory order (trajectory_list, as `sessions`): event_at, then batch, then source row.
    select
        store || '|' || session_id as event_times_id,
        store,
        session_id,
        {{ trajectory_list('event_at') }} as event_times

    from interactions
    group by store, session_id

)

select * from final
