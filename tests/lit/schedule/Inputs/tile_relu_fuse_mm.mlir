// A hand-written schedule: tile block C by [8, 32], fuse block Y (and its init) into the tile.
module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op {transform.readonly}) {
    %c = transform.structured.match attributes {mlc.block = "C"} in %root : (!transform.any_op) -> !transform.any_op
    %y = transform.structured.match attributes {mlc.block = "Y"} in %root : (!transform.any_op) -> !transform.any_op
    %init = transform.structured.match attributes {mlc.block_init = "Y"} in %root : (!transform.any_op) -> !transform.any_op
    %c1, %li, %lj = transform.structured.tile_using_for %c tile_sizes [8, 32]
        : (!transform.any_op) -> (!transform.any_op, !transform.any_op, !transform.any_op)
    %y1, %l1 = transform.structured.fuse_into_containing_op %y into %lj
        : (!transform.any_op, !transform.any_op) -> (!transform.any_op, !transform.any_op)
    %i1, %l2 = transform.structured.fuse_into_containing_op %init into %l1
        : (!transform.any_op, !transform.any_op) -> (!transform.any_op, !transform.any_op)
    transform.yield
  }
}
