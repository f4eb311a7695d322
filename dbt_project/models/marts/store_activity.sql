with

events as (

    select * from {{ ref('int_events_deduplicated') }}

),

session_labels as (

    select * from {{ ref('int_session_labels_resolved') }}

),

events_labeled as (

    -- Each row counts under its session's resolved actor, not its own row label.
    select
        events.session_id,
        events.store,
        events.record_type,
        events.event_name,
        events.price,
        session_labels.actor,
        cast(events.event_at as date) as activity_date

    from events
    inner join session_labels
        on events.session_id = session_labels.session_id

),

daily_activity as (

    select
        store,
        actor,
        activity_date,
        count(distinct session_id) as n_sessions,
        count(*) filter (where record_type = 'interaction') as n_events,
        count(*) filter (
            where record_type = 'interaction' and event_name = 'purchase_complete'
        ) as n_purchases,
        count(*) filter (where record_type = 'price_log') as n_price_quotes,
        avg(price) filter (where record_type = 'price_log') as mean_price_quoted

    from events_labeled
    group by store, actor, activity_date

),

final as (

    select
        store || '|' || actor || '|' || strftime(activity_date, '%Y-%m-%d') as store_activity_id,
        *

    from daily_activity

)

select * from final
