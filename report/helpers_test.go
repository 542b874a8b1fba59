package report

import (
	"path/filepath"
)

// corpusDir is the shared model corpus (real architectures, small weights).
var corpusDir = filepath.Join("..", "..", "shared", "models")
