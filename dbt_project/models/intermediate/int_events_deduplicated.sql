with

events as (

    select * from {{ ref('stg_events') }}

),

ranked as (

    -- Re-ingesting the same content yields the same event_id: keep its first occurrence
    -- (smallest batch key, then source position) so the choice is deterministic.
    select
        *,
        row_number() over (
            partition by event_id
            order by batch_id, source_row
        ) as occurrence

    from events

),

deduplicated as (

    select * exclude (occurrence)
    from ranked
    where occurrence = 1

)

select * from deduplicated
