with

session_labels as (

    select * from {{ ref('int_session_labels_resolved') }}

),

final as (

    select
        session_id,
        actor,
        label_source,
        is_labeled,
        n_human_labels,
        n_agent_labels,
        n_conflicting_labels

    from session_labels

)

select * from final
