with

events as (

    select * from {{ ref('int_events_deduplicated') }}

),

label_counts as (

    -- Rows labelled 'unknown' carry no label; they neither confirm nor contradict one.
    select
        session_id,
        count(*) filter (where actor = 'human') as n_human_labels,
        count(*) filter (where actor = 'agent') as n_agent_labels,
        coalesce(
            bool_or(label_source = 'experiment') filter (where actor in ('human', 'agent')),
            false
        ) as has_experiment_label

    from events
    group by session_id

),

resolved as (

    select
        session_id,
        n_human_labels,
        n_agent_labels,
        has_experiment_label,
        case
            when n_human_labels > 0 and n_agent_labels = 0 then 'human'
            when n_agent_labels > 0 and n_human_labels = 0 then 'agent'
            else 'unknown'
        end as actor,
        -- rows that would have to change for the session to agree with itself
        least(n_human_labels, n_agent_labels) as n_conflicting_labels

    from label_counts

),

final as (

    select
        session_id,
        actor,
        case
            when actor = 'unknown' then 'none'
            when has_experiment_label then 'experiment'
            else 'actor_column'
        end as label_source,
        actor <> 'unknown' as is_labeled,
        n_human_labels,
        n_agent_labels,
        n_conflicting_labels

    from resolved

)

select * from final
