with

events as (

    select * from {{ ref('int_events_deduplicated') }}

),

session_labels as (

    select * from {{ ref('int_session_labels_resolved') }}

),

session_summaries as (

    -- Trajectory order (trajectory_list): event_at, then batch, then position in the source file.
    select
        session_id,
        min(store) as store,
        min(experiment_id) as experiment_id,
        min(event_at) as started_at,
        max(event_at) as ended_at,
        count(*) filter (where record_type = 'interaction') as n_events,
        count(*) filter (where record_type = 'price_log') as n_price_quotes,
        count(distinct batch_id) as n_batches,
        min(batch_id) as first_batch_id,
        {{ trajectory_list('event_name', where="record_type = 'interaction'") }} as trajectory,
        {{ trajectory_list('product_id', where="record_type = 'interaction'") }} as product_ids,
        {{ trajectory_list('epoch_ms(event_at)', where="record_type = 'interaction'") }} as event_ms

    from events
    group by session_id

),

final as (

    select
        session_summaries.session_id,
        session_summaries.store,
        session_summaries.experiment_id,
        session_labels.actor,
        session_labels.label_source,
        session_summaries.started_at,
        session_summaries.ended_at,
        date_diff('millisecond', session_summaries.started_at, session_summaries.ended_at)
        / 1000.0 as duration_s,
        session_summaries.n_events,
        session_summaries.n_price_quotes,
        session_summaries.n_batches,
        coalesce(session_summaries.trajectory, []::varchar[]) as trajectory,
        coalesce(session_summaries.product_ids, []::varchar[]) as product_ids,
        -- Time of each trajectory event after the session's first one (the detector's timing).
        [
            t - session_summaries.event_ms[1]
            for t in coalesce(session_summaries.event_ms, []::bigint[])
        ] as event_offsets_ms,
        session_summaries.first_batch_id

    from session_summaries
    inner join session_labels
        on session_summaries.session_id = session_labels.session_id

)

select * from final
