"""Command-line tools that MXNet ships beside its package (`mxnet/tools`): `im2rec` packs an
image folder into the RecordIO files `ImageRecordIter` reads (`python -m minimod.tools.im2rec`),
`parse_log` turns a training log into a table of its per-epoch metrics
(`python -m minimod.tools.parse_log`).
"""
