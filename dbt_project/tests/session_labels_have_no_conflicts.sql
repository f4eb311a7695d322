{{ config(severity = 'warn') }}

-- Soft expectation: every session's rows agree on the actor. A conflicting session is kept with
-- actor 'unknown' (never used to fit kernels); this warns so the export can be inspected.
select
    session_id,
    n_human_labels,
    n_agent_labels,
    n_conflicting_labels

from {{ ref('session_labels') }}
where n_conflicting_labels > 0
