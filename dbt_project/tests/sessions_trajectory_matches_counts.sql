-- Contract for the Python side: trajectory and product_ids are aligned and hold n_events items.
select
    session_id,
    n_events,
    len(trajectory) as n_trajectory,
    len(product_ids) as n_product_ids

from {{ ref('sessions') }}
where len(trajectory) <> n_events
    or len(product_ids) <> n_events
