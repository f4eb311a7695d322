{#
    Stop the build with a clear message when the lake holds no raw_events batch.

    DuckDB would otherwise fail deep inside view creation with "No files found that match the
    pattern". The glob is read from the source's meta so it is defined in one place
    (models/staging/__sources.yml). Only runs at execution time: `dbt parse` never touches files.
#}
{% macro assert_raw_events_present() %}
    {% if execute %}
        {% set raw_events = graph.sources.values()
            | selectattr('source_name', 'equalto', 'lake')
            | selectattr('name', 'equalto', 'raw_events')
            | first %}
        {% set raw_events_glob = raw_events.meta.raw_events_glob %}
        {% set n_files = run_query(
            "select count(*) from glob('" ~ raw_events_glob ~ "')"
        ).columns[0].values()[0] %}
        {% if n_files == 0 %}
            {{ exceptions.raise_compiler_error(
                "No raw_events batch found: nothing matches '" ~ raw_events_glob ~ "'. "
                ~ "Materialize the Dagster asset raw_events for at least one batch first, and set "
                ~ "PHANTOM_DATA_DIR to the absolute storage root that holds lake/raw_events/."
            ) }}
        {% endif %}
    {% endif %}
{% endmacro %}
