package engine

import (
	"encoding/json"

	"github.com/voicebox-go/voicebox/internal/shared/rawjson"
	"github.com/voicebox-go/voicebox/internal/shared/strictjson"
)

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

// noParams is the parameters of a method that takes none: any member is refused.
type noParams struct{}

func (*noParams) StrictFields() []strictjson.Field { return nil }

// miniAppsLaunchParams are the parameters of miniAppsLaunch.
type miniAppsLaunchParams struct {
	Name string `json:"name"`
	Path string `json:"path"`
}

func (p *miniAppsLaunchParams) StrictFields() []strictjson.Field {
	return []strictjson.Field{{Name: "name", Into: &p.Name}, {Name: "path", Into: &p.Path}}
}

// miniAppsFileParams are the parameters of miniAppsFile.
type miniAppsFileParams struct {
	AppID string `json:"appId"`
	Path  string `json:"path"`
}

func (p *miniAppsFileParams) StrictFields() []strictjson.Field {
	return []strictjson.Field{{Name: "appId", Into: &p.AppID}, {Name: "path", Into: &p.Path}}
}

// miniAppsResetParams are the parameters of miniAppsReset.
type miniAppsResetParams struct {
	AppID string  `json:"appId"`
	Doc   *uint64 `json:"doc"`
}

func (p *miniAppsResetParams) StrictFields() []strictjson.Field {
	return []strictjson.Field{{Name: "appId", Into: &p.AppID}, {Name: "doc", Into: &p.Doc}}
}

// miniAppsCloseParams are the parameters of miniAppsClose.
type miniAppsCloseParams struct {
	AppID string  `json:"appId"`
	Why   string  `json:"why"`
	Doc   *uint64 `json:"doc"`
}

func (p *miniAppsCloseParams) StrictFields() []strictjson.Field {
	return []strictjson.Field{{Name: "appId", Into: &p.AppID}, {Name: "why", Into: &p.Why}, {Name: "doc", Into: &p.Doc}}
}

// miniAppsRegisterParams are the parameters of miniAppsRegister.
type miniAppsRegisterParams struct {
	AppID string          `json:"appId"`
	Tool  json.RawMessage `json:"tool"`
	View  bool            `json:"view"`
}

func (p *miniAppsRegisterParams) StrictFields() []strictjson.Field {
	return []strictjson.Field{{Name: "appId", Into: &p.AppID}, {Name: "tool", Into: &p.Tool}, {Name: "view", Into: &p.View}}
}

// miniAppsUnregisterParams are the parameters of miniAppsUnregister.
type miniAppsUnregisterParams struct {
	AppID string `json:"appId"`
	Name  string `json:"name"`
}

func (p *miniAppsUnregisterParams) StrictFields() []strictjson.Field {
	return []strictjson.Field{{Name: "appId", Into: &p.AppID}, {Name: "name", Into: &p.Name}}
}

// miniAppsCallParams are the parameters of miniAppsCall.
type miniAppsCallParams struct {
	AppID string          `json:"appId"`
	Tool  string          `json:"tool"`
	Name  string          `json:"name"`
	Args  json.RawMessage `json:"args"`
}

func (p *miniAppsCallParams) StrictFields() []strictjson.Field {
	return []strictjson.Field{{Name: "appId", Into: &p.AppID}, {Name: "tool", Into: &p.Tool}, {Name: "name", Into: &p.Name}, {Name: "args", Into: &p.Args}}
}

// miniAppsValidateParams are the parameters of miniAppsValidate.
type miniAppsValidateParams struct {
	AppID string          `json:"appId"`
	Tool  string          `json:"tool"`
	Args  json.RawMessage `json:"args"`
}

func (p *miniAppsValidateParams) StrictFields() []strictjson.Field {
	return []strictjson.Field{{Name: "appId", Into: &p.AppID}, {Name: "tool", Into: &p.Tool}, {Name: "args", Into: &p.Args}}
}

// miniAppsResultParams are the parameters of miniAppsResult.
type miniAppsResultParams struct {
	CallID  string          `json:"callId"`
	Result  json.RawMessage `json:"result"`
	Refused string          `json:"refused"`
	Why     string          `json:"why"`
}

func (p *miniAppsResultParams) StrictFields() []strictjson.Field {
	return []strictjson.Field{{Name: "callId", Into: &p.CallID}, {Name: "result", Into: &p.Result}, {Name: "refused", Into: &p.Refused}, {Name: "why", Into: &p.Why}}
}

// miniAppsPortParams are the parameters of miniAppsPort.
type miniAppsPortParams struct {
	AppID string `json:"appId"`
	Doc   uint64 `json:"doc"`
}

func (p *miniAppsPortParams) StrictFields() []strictjson.Field {
	return []strictjson.Field{{Name: "appId", Into: &p.AppID}, {Name: "doc", Into: &p.Doc}}
}

// miniAppsSaveParams are the parameters of miniAppsSave.
type miniAppsSaveParams struct {
	Name  string `json:"name"`
	Title string `json:"title"`
}

func (p *miniAppsSaveParams) StrictFields() []strictjson.Field {
	return []strictjson.Field{{Name: "name", Into: &p.Name}, {Name: "title", Into: &p.Title}}
}

// miniAppsDeleteParams are the parameters of miniAppsDelete.
type miniAppsDeleteParams struct {
	ID string `json:"id"`
}

func (p *miniAppsDeleteParams) StrictFields() []strictjson.Field {
	return []strictjson.Field{{Name: "id", Into: &p.ID}}
}

// exportNextParams are the parameters of exportNext.
type exportNextParams struct {
	ExportID string `json:"exportId"`
}

func (p *exportNextParams) StrictFields() []strictjson.Field {
	return []strictjson.Field{{Name: "exportId", Into: &p.ExportID}}
}

// rootOpenParams are the parameters of rootOpen.
type rootOpenParams struct {
	Kind string `json:"kind"`
}

func (p *rootOpenParams) StrictFields() []strictjson.Field {
	return []strictjson.Field{{Name: "kind", Into: &p.Kind}}
}

// toolLaunchMiniAppParams are the parameters of toolLaunchMiniApp.
type toolLaunchMiniAppParams struct {
	Name string `json:"name"`
}

func (p *toolLaunchMiniAppParams) StrictFields() []strictjson.Field {
	return []strictjson.Field{{Name: "name", Into: &p.Name}}
}

// toolCreateMiniAppParams are the parameters of toolCreateMiniApp.
type toolCreateMiniAppParams struct {
	Title string `json:"title"`
	HTML  string `json:"html"`
}

func (p *toolCreateMiniAppParams) StrictFields() []strictjson.Field {
	return []strictjson.Field{{Name: "title", Into: &p.Title}, {Name: "html", Into: &p.HTML}}
}

// externalAppsReportParams are the parameters of externalAppsReport.
type externalAppsReportParams struct {
	Apps []json.RawMessage `json:"apps"`
}

func (p *externalAppsReportParams) StrictFields() []strictjson.Field {
	return []strictjson.Field{{Name: "apps", Into: &p.Apps}}
}

func (p *uploadBeginParam) StrictFields() []strictjson.Field {
	return []strictjson.Field{{Name: "path", Into: &p.Path}, {Name: "mode", Into: &p.Mode}}
}

func (p *appParam) StrictFields() []strictjson.Field {
	return []strictjson.Field{{Name: "appId", Into: &p.AppID}}
}

// The parameters the page's file methods pass on to the executor are written as json.Marshal
// writes them (TestRunArgumentsAgreeWithJSON).

func (noParams) AppendJSON(dst []byte) []byte { return append(dst, "{}"...) }

// The parameters' AppendJSON have pointer receivers (w.run takes &p): a value method of a type
// put in an interface keeps a (*T) wrapper beside it in the page's wasm as well.
func (p *dirParam) AppendJSON(dst []byte) []byte {
	w := rawjson.NewObject(dst, true)
	w.String("dir", p.Dir)
	return w.Close()
}

func (p *pathParam) AppendJSON(dst []byte) []byte {
	w := rawjson.NewObject(dst, true)
	w.String("path", p.Path)
	return w.Close()
}

func (p *writeParam) AppendJSON(dst []byte) []byte {
	w := rawjson.NewObject(grow(dst, 64+len(p.Path)+len(p.Content)+len(p.Expect)), true)
	w.String("path", p.Path)
	w.String("content", p.Content)
	if p.Mode != "" {
		w.String("mode", p.Mode)
	}
	if p.Expect != "" {
		w.String("expect", p.Expect)
	}
	return w.Close()
}

func (p *moveParam) AppendJSON(dst []byte) []byte {
	w := rawjson.NewObject(dst, true)
	w.String("path", p.Path)
	w.String("to", p.To)
	return w.Close()
}

func (p *undoParam) AppendJSON(dst []byte) []byte {
	w := rawjson.NewObject(dst, true)
	if p.Resolve != "" {
		w.String("resolve", p.Resolve)
	}
	return w.Close()
}
