"""Operations the platform owner runs against a cluster: drains, MultiKueue setup and rotation, audit."""
