package engine

import "github.com/voicebox-go/voicebox/internal/shared/strictjson"

// The file methods' parameters list their fields, so decodeParams reads them without reflection
// (strictjson.Struct; TestParamsListTheirFields holds each list to its struct tags).

func (p *pathParam) StrictFields() []strictjson.Field {
	return []strictjson.Field{{Name: "path", Into: &p.Path}}
}

func (p *dirParam) StrictFields() []strictjson.Field {
	return []strictjson.Field{{Name: "dir", Into: &p.Dir}}
}

func (p *writeParam) StrictFields() []strictjson.Field {
	return []strictjson.Field{{Name: "path", Into: &p.Path}, {Name: "content", Into: &p.Content},
		{Name: "mode", Into: &p.Mode}, {Name: "expect", Into: &p.Expect}}
}

func (p *moveParam) StrictFields() []strictjson.Field {
	return []strictjson.Field{{Name: "path", Into: &p.Path}, {Name: "to", Into: &p.To}}
}

func (p *undoParam) StrictFields() []strictjson.Field {
	return []strictjson.Field{{Name: "resolve", Into: &p.Resolve}}
}

func (p *uploadParam) StrictFields() []strictjson.Field {
	return []strictjson.Field{{Name: "uploadId", Into: &p.UploadID}}
}
