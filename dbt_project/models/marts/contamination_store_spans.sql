with

sessions as (

    select * from {{ ref('sessions') }}

),

final as (

    select
        store,
        min(started_at) as first_session_at,
        max(started_at) as last_session_at,
        (epoch_ms(max(started_at)) - epoch_ms(min(started_at))) / 1000.0 as window_s

    from sessions
    group by store

)

select * from final
