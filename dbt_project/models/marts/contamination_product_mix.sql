with

events as (

    select * from {{ ref('int_events_deduplicated') }}

),

product_interactions as (

    -- Interaction events only: price-log rows quote prices, they are not demand.
    select
        store,
        product_id

    from events
    where record_type = 'interaction' and product_id is not null

),

final as (

    select
        store || '|' || product_id as product_mix_id,
        store,
        product_id,
        count(*) as n_interactions

    from product_interactions
    group by store, product_id

)

select * from final
