"""The storage ports written once in SQL both SQLite and PostgreSQL accept, one module per
group of aggregates. Placeholders are `?`; the PostgreSQL executor rewrites them."""
