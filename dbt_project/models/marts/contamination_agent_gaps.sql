with

events as (

    select * from {{ ref('int_events_deduplicated') }}

),

session_labels as (

    select * from {{ ref('int_session_labels_resolved') }}

),

agent_events as (

    select
        events.event_id,
        events.session_id,
        events.store,
        events.event_at,
        events.batch_id,
        events.source_row

    from events
    inner join session_labels
        on events.session_id = session_labels.session_id
    where events.record_type = 'interaction' and session_labels.actor = 'agent'

),

gaps as (

    -- Trajectory order: event_at, then batch, then position in the source file (as `sessions`).
    select
        event_id,
        session_id,
        store,
        (
            epoch_ms(event_at)
            - epoch_ms(lag(event_at) over (
                partition by session_id order by event_at, batch_id, source_row
            ))
        ) / 1000.0 as gap_s

    from agent_events

),

final as (

    select * from gaps
    where gap_s is not null

)

select * from final
