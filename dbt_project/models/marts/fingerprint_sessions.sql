with

sessions as (

    select * from {{ ref('sessions') }}

),

session_labels as (

    select * from {{ ref('session_labels') }}

),

final as (

    select
        sessions.session_id,
        sessions.store,
        sessions.actor,
        sessions.label_source,
        sessions.experiment_id,
        sessions.n_events,
        sessions.trajectory,
        sessions.product_ids,
        sessions.event_offsets_ms,
        sessions.started_at,
        session_labels.is_labeled

    from sessions
    inner join session_labels
        on sessions.session_id = session_labels.session_id

)

select * from final
