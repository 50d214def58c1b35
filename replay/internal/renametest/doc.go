// Package renametest holds three versions of one workflow for the replay
// rename test: as recorded, with the field holding its agent renamed, and
// renamed with the old name pinned by the rath struct tag. Each version
// is a package named pipeline, so the workflow's type reads the same
// (*pipeline.Pipeline) in all three, as it would across a real edit.
package renametest
