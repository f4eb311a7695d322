with

events as (

    select * from {{ ref('int_events_deduplicated') }}

),

session_labels as (

    select * from {{ ref('int_session_labels_resolved') }}

),

quoted_sessions as (

    -- Sessions the shop quoted a price in: their engagement before each quote is what the
    -- store's price model regresses the quote on (store_prices).
    select distinct session_id
    from events
    where record_type = 'price_log'

),

final as (

    select
        events.event_id,
        events.batch_id,
        events.source_row,
        events.session_id,
        events.experiment_id,
        events.store,
        events.event_at,
        events.event_name,
        events.record_type,
        events.product_id,
        events.price,
        session_labels.actor

    from events
    inner join quoted_sessions
        on events.session_id = quoted_sessions.session_id
    left join session_labels
        on events.session_id = session_labels.session_id

)

select * from final
