"""Command-line tools that MXNet ships beside its package (`mxnet/tools`): `im2rec` packs an
image folder into the RecordIO files `ImageRecordIter` reads (`python -m minimod.tools.im2rec`).
"""
