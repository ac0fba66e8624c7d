package commands

// The built-in tool names, as the model calls them.
const (
	ReadFile         = "read_file"
	WriteFile        = "write_file"
	ListFiles        = "list_files"
	DeleteFile       = "delete_file"
	EditFile         = "edit_file"
	GrepFiles        = "grep_files"
	LaunchMiniApp    = "launch_mini_app"
	CreateMiniApp    = "create_mini_app"
	ListMiniApps     = "list_mini_apps"
	ListExtensions   = "list_extensions"
	CallExtension    = "call_extension"
	ProposeExtension = "propose_extension"
	UndoLastAction   = "undo_last_action"
	RedoLastAction   = "redo_last_action"
	DiffFile         = "diff_file"
	FileInfo         = "file_info"
	DirectoryTree    = "directory_tree"
	ReadFiles        = "read_files"
	ReadMediaFile    = "read_media_file"
	CreateFolder     = "create_folder"
	MoveFile         = "move_file"
	ListTools        = "list_tools"
	SearchTools      = "search_tools"
)

// builtin is one built-in tool as it is declared: name, what the model is told, its parameter
// schema in the toolschema subset, whether a call waits for the user's approval, and whether its
// success changes the workspace's files.
type builtin struct {
	name, description string
	parameters        string
	confirm           bool
	changes           bool
}

// pathProp describes the name argument of the file tools.
const pathProp = `{"type":"string","description":"The file's path inside the workspace, relative and slash-separated, such as notes.md or docs/plan.txt."}`

// builtins are the built-in tools in the order the model is offered them. Every schema closes its
// object (additionalProperties false), so an unknown key is refused rather than ignored.
var builtins = []builtin{
	{name: ReadFile,
		description: "Read a file in the workspace. Text comes back as it is; a file over 64 KiB comes back cut, with truncated true and size the whole length; a file that is not text comes back in base64. With head or tail, only the first or last lines of a text file come back.",
		parameters: `{"type":"object","properties":{"name":` + pathProp + `,` +
			`"head":{"type":"integer","minimum":1,"maximum":10000,"description":"Only the first this many lines."},` +
			`"tail":{"type":"integer","minimum":1,"maximum":10000,"description":"Only the last this many lines (files up to 16 MiB)."}},` +
			`"required":["name"],"additionalProperties":false}`},
	{name: ReadFiles,
		description: "Read several files at once (at most 8). Each comes back on its own, as read_file gives it but cut at 16 KiB, or with its own refusal; one file that cannot be read does not stop the others.",
		parameters: `{"type":"object","properties":{"names":{"type":"array","items":{"type":"string"},"description":"The files' paths inside the workspace, 1 to 8 of them."}},` +
			`"required":["names"],"additionalProperties":false}`},
	{name: ReadMediaFile,
		description: "Read an image or audio file whole (at most 512 KiB), in base64, with its type as its bytes say (not its name). Anything else is refused not-media.",
		parameters:  `{"type":"object","properties":{"name":` + pathProp + `},"required":["name"],"additionalProperties":false}`},
	{name: FileInfo,
		description: "Describe a file or folder of the workspace: whether it is a file or a folder, its size, and when it last changed.",
		parameters:  `{"type":"object","properties":{"name":` + pathProp + `},"required":["name"],"additionalProperties":false}`},
	{name: DirectoryTree,
		description: "The folders and files under a folder of the workspace as a tree, a few levels deep (3 unless depth says otherwise, at most 8) and at most 500 entries in all; a folder at the depth bound says more: true.",
		parameters: `{"type":"object","properties":{"dir":{"type":"string","description":"The folder, relative to the workspace; leave it out for the top of the workspace."},` +
			`"depth":{"type":"integer","minimum":1,"maximum":8,"description":"How many levels to go down; 3 when left out."}},` +
			`"additionalProperties":false}`},
	{name: WriteFile, changes: true,
		description: "Create a file, or replace the whole content of one, with the given text (at most 64 KiB in one call). Missing folders are created. The version it replaces is kept, so undo_last_action can bring it back.",
		parameters: `{"type":"object","properties":{"name":` + pathProp + `,` +
			`"content":{"type":"string","description":"The complete new content of the file."}},` +
			`"required":["name","content"],"additionalProperties":false}`},
	{name: CreateFolder, changes: true,
		description: "Make a folder, and the folders above it that are missing. A folder that is there already is fine; a file in the way is refused file-exists. undo_last_action removes the folders it made while they are still empty.",
		parameters:  `{"type":"object","properties":{"name":{"type":"string","description":"The folder's path inside the workspace, such as docs/drafts."}},"required":["name"],"additionalProperties":false}`},
	{name: MoveFile, changes: true,
		description: "Move or rename a file or a folder (with everything in it). It never replaces anything: a name that is taken is refused file-exists; folders the new path lacks are made. undo_last_action moves it back. In the browser's storage only files move; a folder there is refused move-unsupported.",
		parameters: `{"type":"object","properties":{"from":{"type":"string","description":"The file or folder to move, relative to the workspace."},` +
			`"to":{"type":"string","description":"Its new path, relative to the workspace, such as archive/notes.md."}},` +
			`"required":["from","to"],"additionalProperties":false}`},
	{name: ListFiles,
		description: "List the files and folders in a folder of the workspace, with their sizes.",
		parameters: `{"type":"object","properties":{"dir":{"type":"string","description":"The folder to list, relative to the workspace; leave it out for the top of the workspace."}},` +
			`"additionalProperties":false}`},
	{name: DeleteFile, confirm: true, changes: true,
		description: "Delete a file. The user is asked to approve it in the page first: the answer says whether they approved, denied or did not answer in time. A deleted file can be brought back with undo_last_action.",
		parameters:  `{"type":"object","properties":{"name":` + pathProp + `},"required":["name"],"additionalProperties":false}`},
	{name: EditFile, changes: true,
		description: "Change part of a file: replace oldText, which must occur exactly once in the file, with newText; or make several replacements in turn with oldTexts and newTexts (each must occur once in the text as the ones before it left it). Copy the old text exactly from read_file, with enough of its surroundings to be unique; an absent or repeated one is refused and nothing changes. The answer has the unified diff; with dryRun true nothing is written and the diff says what would change. undo_last_action brings the earlier version back.",
		parameters: `{"type":"object","properties":{"name":` + pathProp + `,` +
			`"oldText":{"type":"string","description":"The exact text to replace, as it is in the file now."},` +
			`"newText":{"type":"string","description":"The text to put in its place; empty to remove oldText."},` +
			`"oldTexts":{"type":"array","items":{"type":"string"},"description":"For several replacements: the texts to replace, in order (at most 32), instead of oldText."},` +
			`"newTexts":{"type":"array","items":{"type":"string"},"description":"For several replacements: what to put in place of each of oldTexts, in the same order."},` +
			`"dryRun":{"type":"boolean","description":"true to only preview the diff; nothing is written."}},` +
			`"required":["name"],"additionalProperties":false}`},
	{name: GrepFiles,
		description: "Search the text files of the workspace (or of one folder in it) for a piece of text, ignoring case. It is plain text, not a pattern. Returns each matching line with its file and line number, at most 100.",
		parameters: `{"type":"object","properties":{"query":{"type":"string","minLength":1,"description":"The text to look for."},` +
			`"dir":{"type":"string","description":"The folder to search, relative to the workspace; leave it out to search everything."}},` +
			`"required":["query"],"additionalProperties":false}`},
	{name: LaunchMiniApp,
		description: "Open a mini-app (a sandboxed HTML app) in the user's page, by the id, title or file name list_mini_apps gives. Once it has loaded, the tools it registers are offered to you too.",
		parameters: `{"type":"object","properties":{"name":{"type":"string","description":"The mini-app's id, title or file name."}},` +
			`"required":["name"],"additionalProperties":false}`},
	{name: CreateMiniApp, changes: true,
		description: "Write a new mini-app into the workspace as one self-contained HTML file named after its title, then open it in the page. The app runs sandboxed with no network; it offers tools with webMcp.registerTool({name, description, parameters, execute}).",
		parameters: `{"type":"object","properties":{"title":{"type":"string","minLength":1,"maxLength":100,"description":"The app's title; its file name is made from it."},` +
			`"html":{"type":"string","minLength":1,"description":"The whole HTML document."}},` +
			`"required":["title","html"],"additionalProperties":false}`},
	{name: ListMiniApps,
		description: "List the mini-apps that can be opened (saved apps, and the HTML pages at the top of the workspace), with their ids and titles.",
		parameters:  `{"type":"object","properties":{},"additionalProperties":false}`},
	{name: ListExtensions,
		description: "List the extensions: those a person admitted, with their tools; proposals waiting for a person's decision; and the shipped catalogue.",
		parameters:  `{"type":"object","properties":{},"additionalProperties":false}`},
	{name: CallExtension,
		description: "Call a tool of an admitted extension by the tool name list_extensions shows. A tool that writes files waits for the user's approval first.",
		parameters: `{"type":"object","properties":{"name":{"type":"string","description":"The extension tool's name."},` +
			`"extension":{"type":"string","description":"The extension's id, when two extensions could be meant; usually left out."},` +
			`"arguments":{"type":"string","description":"The tool's arguments as a JSON object, such as {\"query\":\"weather\"}; leave it out when the tool takes none."}},` +
			`"required":["name"],"additionalProperties":false}`},
	{name: ProposeExtension,
		description: "Propose a new extension by its JSON descriptor. It is only staged: nothing in it runs until a person reads its plan and admits it in the Extensions panel.",
		parameters: `{"type":"object","properties":{"descriptor":{"type":"string","minLength":2,"description":"The extension descriptor, a JSON object as text."}},` +
			`"required":["descriptor"],"additionalProperties":false}`},
	{name: DiffFile,
		description: "Preview what writing content to a file would change, without changing it: a unified diff of the file as it is now against the proposed content (a missing file counts as empty).",
		parameters: `{"type":"object","properties":{"name":` + pathProp + `,` +
			`"content":{"type":"string","description":"The proposed complete content of the file."}},` +
			`"required":["name","content"],"additionalProperties":false}`},
	{name: ListTools,
		description: "List every tool you can use now: these built-in tools, the open mini-apps' tools, and the extensions (admitted, proposed and in the catalogue), each with its kind and status. Optional kind filters: native, extension or mini-app.",
		parameters: `{"type":"object","properties":{"kind":{"type":"string","description":"Only tools of this kind: native, extension or mini-app."}},` +
			`"additionalProperties":false}`},
	{name: SearchTools,
		description: "Search the tools list_tools lists by keyword or capability (such as diff, time, weather), best matches first.",
		parameters: `{"type":"object","properties":{"query":{"type":"string","minLength":1,"description":"The words to look for."},` +
			`"kind":{"type":"string","description":"Only tools of this kind: native, extension or mini-app."},` +
			`"limit":{"type":"integer","minimum":1,"maximum":100,"description":"The most results to return; 25 when left out."}},` +
			`"required":["query"],"additionalProperties":false}`},
	{name: UndoLastAction, changes: true,
		description: "Undo the most recent change to the workspace's files (a write, edit, delete, move, new folder or removed folder, made through these tools or by the person in the page), putting it back exactly as it was. Refused when there is nothing to undo, or when what it changed changed again since.",
		parameters:  `{"type":"object","properties":{},"additionalProperties":false}`},
	{name: RedoLastAction, changes: true,
		description: "Redo the change undo_last_action took back last, putting it in effect again. Refused when nothing was undone, when a new change since ended the redos, or when what the undo left changed again since.",
		parameters:  `{"type":"object","properties":{},"additionalProperties":false}`},
}
