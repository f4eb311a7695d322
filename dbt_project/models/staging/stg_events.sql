{{ assert_raw_events_present() }}

with

source as (

    select * from {{ source('lake', 'raw_events') }}

),

renamed as (

    select
        -- ids
        cast(event_id as varchar) as event_id,
        cast(batch_id as varchar) as batch_id,
        cast(source_row as bigint) as source_row,
        cast(session_id as varchar) as session_id,
        cast(experiment_id as varchar) as experiment_id,

        -- properties
        cast(store as varchar) as store,
        cast(event as varchar) as event_name,
        cast(record_type as varchar) as record_type,
        cast(page as varchar) as page,
        cast(product_id as varchar) as product_id,
        cast(price as double) as price,
        cast(user_agent as varchar) as user_agent,
        cast(metadata as varchar) as metadata_json,

        -- labels
        cast(actor as varchar) as actor,
        cast(label_source as varchar) as label_source,

        -- provenance: 'payload' (the record's own ts) or 'kafka_record' (envelope timestamp)
        cast(ts_source as varchar) as ts_source,

        -- timestamps: UTC wall clock, whatever the reading session's TimeZone
        timezone('UTC', ts) as event_at

    from source

)

select * from renamed
