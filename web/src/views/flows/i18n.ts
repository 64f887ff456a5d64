// The Flows view's messages, English and Chinese (seed 001: the host's
// validation messages are shown in the UI's language). They are merged
// into the app's messages when the view's chunk loads, so they travel with
// the view and not in the first load. Braces, "@" and "|" are message
// syntax in vue-i18n: placeholders such as {{inputs.x}} are passed in as
// parameters, never written here.

import { i18n } from '../../i18n'

const en = {
  flows: {
    title: 'Flows',
    publish: 'Publish',
    unpublish: 'Unpublish',
    list: {
      mine: 'My flows', templates: 'Templates', search: 'Search flows', new: 'New flow', published: 'published', draft: 'draft',
      noDescription: 'No description.', steps: '{n} step | {n} steps', copyHint: 'Save a copy as a new draft', confirmDelete: 'Delete the flow "{name}"? Its runs stay in the history.',
      empty: 'No saved flows yet.', emptyHint: 'Build one on the canvas, or start from a template.', browse: 'Browse templates',
      templatesHint: 'Ready-made flows over weft\'s built-in tools, wired and with a run form. Open one, adjust it, save it as your own.',
      use: 'Use template', missingTools: 'This server lacks: {tools}',
    },
    builder: {
      back: 'Back to flows', untitled: 'Untitled flow', namePlaceholder: 'Flow name', new: 'not saved yet', saving: 'Saving…', unsaved: 'Unsaved changes',
      saved: 'Saved · revision {rev}', savedNow: 'Saved', undo: 'Undo (Ctrl/⌘+Z)', redo: 'Redo (Shift+Ctrl/⌘+Z)', tidy: 'Tidy up the layout',
      inputs: 'Inputs', problems: '{n} problem | {n} problems', valid: 'Valid', run: 'Run', configure: 'Configure', settings: 'Flow', name: 'Name',
      description: 'Description', descriptionHint: 'What the flow does. It becomes the run\'s goal; it may use the inputs as placeholders.',
      noInputs: 'No inputs: the flow runs as it is.', publishing: 'Publishing', notPublished: 'A draft: only people can run it.',
      publishedAs: 'Published: chat sessions can call it as the tool {tool}.', copy: 'Save a copy', stats: 'Canvas',
      counts: '{steps} steps, {edges} connections, {notes} notes', plan: 'Compiled plan (what runs)', flow: 'flow',
      keys: 'Drag tools from the palette; connect the arrow on the right of a step to the bar on the left of the next. Delete removes the selection; Ctrl/⌘+Z undoes, Shift+Ctrl/⌘+Z redoes, Ctrl/⌘+D duplicates, Ctrl/⌘+S saves.',
      fixFirst: 'The flow has a problem: fix it before saving (it is marked on the canvas). | The flow has {n} problems: fix them before saving (they are marked on the canvas).', needName: 'Give the flow a name.',
      overwrite: 'Overwrite with mine', reload: 'Reload theirs', rebuilt: 'This flow was saved without a canvas: the canvas was laid out from its plan.',
      emptyTitle: 'An empty canvas', emptyHint: 'Drag tools from the palette on the left, or start from a template.', fromTemplate: 'Start from a template',
    },
    palette: {
      title: 'Nodes', search: 'Search tools', none: 'No tool matches.', hint: 'Drag onto the canvas, or click to add.',
    },
    groups: {
      canvas: 'Canvas', read: 'Read and search', write: 'Write and edit', shell: 'Shell', web: 'Web', people: 'People', agents: 'Agents',
      memory: 'Memory', mcp: 'MCP', mcpServer: 'MCP · {server}', other: 'Other tools',
    },
    note: { title: 'Sticky note', placeholder: 'Write a note…', hint: 'An annotation on the canvas; never runs.' },
    node: { duplicate: 'Duplicate', delete: 'Delete', needsApproval: 'Waits for approval before it runs' },
    edge: { delete: 'Remove connection' },
    canvas: { snapOn: 'Snap to grid', snapOff: 'Stop snapping to grid', bgOn: 'Show the dot grid', bgOff: 'Hide the dot grid' },
    config: {
      step: 'step', label: 'Title', stepId: 'Step id', stepIdHint: 'Other steps use its result by this id. Letters, digits, _ and -.',
      requiresApproval: 'Ask for approval before this step runs', args: 'Arguments', form: 'Form', noArgs: 'This tool takes no arguments.',
      unknownTool: 'The server has no tool {tool}: the flow cannot run until it does.', extraArgs: 'Arguments the tool does not declare: {names}',
      editJSON: 'Edit as JSON', argsObject: 'Arguments must be a JSON object', about: 'About {tool}', lastRun: 'Last run',
      required: 'required', notSet: '(not set)', default: 'default: {value}', clearPlaceholder: 'Use a value instead', addItem: 'Add',
      removeItem: 'Remove', badJSON: 'Not valid JSON: {error}',
    },
    picker: {
      title: 'Insert an input or a step result', inputs: 'Inputs', steps: 'Upstream steps', others: 'Other steps', connect: 'connect',
      connectHint: 'Connects that step to this one, then inserts its result', noInputs: 'No inputs declared (Inputs, in the toolbar).',
      noSteps: 'No step is connected before this one.', file: 'file', whole: 'A placeholder replaces the whole value and keeps its type.',
    },
    inputs: {
      title: 'Inputs of the flow', rows: 'Inputs', body: 'What a person fills in to run the flow, and the tool schema of the published flow. Steps use an input x as an inputs.x placeholder.',
      name: 'Name', type: 'Type', titleCol: 'Label', default: 'Default', required: 'Required', description: 'Description (shown in the run form)',
      options: 'Allowed values, one per line', add: 'Add an input', none: 'No inputs yet.', usedNotDeclared: 'Used by steps but not declared:',
      fileHint: 'The run form asks for a file; steps use it as the whole value file:{name} (with an at sign before it).',
      dirHint: 'The server makes a fresh shared directory for each run; steps use it as file:{name} (with an at sign).',
      tooRich: 'This schema uses more than the rows can show: edit it as JSON.', notObject: 'The schema must be a JSON object.',
      types: { string: 'text', text: 'long text', number: 'number', integer: 'integer', boolean: 'yes/no', array: 'list of text', object: 'object (JSON)', file: 'file', directory: 'shared directory', json: 'JSON' },
      problem: { name: 'Names start with a letter or _ and use letters, digits, _ and -.', duplicate: 'Two inputs have this name.', default: 'The default is not valid JSON for this type.', options: 'Values must be numbers for this type.' },
    },
    run: {
      title: 'Run {name}', start: 'Run', starting: 'Starting…', noInputs: 'This flow has no inputs.', review: 'Let me review the plan before it runs',
      missing: 'Fill in first: {names}', wrongType: 'Must be {type}', filePath: 'A path on the server', autoDir: 'Made by the server for each run.',
      panel: 'Run', cancel: 'Cancel', planWaits: 'The plan waits for your review.', approvePlan: 'Approve and run', stepWaits: 'Step {step} waits for approval',
      approveStep: 'Approve step', args: 'Arguments it runs with', permission: '{tool} asks for permission', checkpoint: 'Confirm irreversible action: {tool}',
      allow: 'Allow', deny: 'Deny', confirm: 'Confirm', steps: 'Steps', noSteps: 'No steps yet.', results: 'Results', final: 'Final result',
      history: 'Recent runs of this flow', reused: 'reused',
    },
    runStatus: {
      starting: 'starting', planning: 'planning', awaiting_plan: 'awaiting review', awaiting_approval: 'awaiting approval', running: 'running',
      completed: 'completed', failed: 'failed', cancelled: 'cancelled', interrupted: 'interrupted',
    },
    stepStatus: { pending: 'pending', running: 'running', awaiting: 'awaiting approval', completed: 'done', failed: 'failed', skipped: 'skipped', cancelled: 'cancelled' },
    dock: {
      title: 'Chat with this flow', sub: 'The model can run "{name}" as the tool run_current_flow.', empty: 'Ask for something this flow does; unsaved edits are saved first.',
      placeholder: 'Message (Enter to send)', reset: 'New conversation', showRun: 'Show this run on the canvas',
      unsupported: 'This server cannot give a chat the flow as a tool yet (run_current_flow is an API addition: see docs/ui.md).',
    },
    guard: {
      leave: 'This flow has unsaved changes. Leave and lose them?', deleteDirty: 'Delete the flow "{name}" and lose the unsaved changes too?',
    },
    server: {
      missing: 'Fill in the required inputs: {names}.', missingInput: 'The input {name} is required.',
      inputType: 'The input {name} must be {want}, not {got}.', nameRequired: 'The flow needs a name.',
      nameTooLong: 'The name is {n} characters long; at most {max} are allowed.',
      conflict: 'Someone saved this flow in the meantime (revision {rev}; yours was based on {mine}).',
      notPublished: 'The flow is not published: publish it first.', notFound: 'The flow no longer exists.',
      requiredUndeclared: 'The input schema requires {name} but does not declare it.', schemaBroken: 'The input schema is not valid JSON Schema: {error}',
      unknownDependency: 'It depends on a step that does not exist ({id}).',
    },
    problem: {
      empty: 'The flow has no steps.', tooMany: 'The flow has {count} steps; at most {limit} are allowed.', noTool: 'The step has no tool.',
      unknownTool: 'The server has no tool {tool}.', idEmpty: 'The step needs an id.', idChars: 'The id {id} may only use letters, digits, _ and -.',
      idDigits: 'The id {id} is a number; ids need a letter (numbers mean positions).', idLong: 'The id is longer than 128 characters.',
      idDuplicate: 'Another step has the id {id}.', cycle: 'The steps form a cycle: {path}. Remove one of its connections.',
      afterCycle: 'The step waits on a cycle ({path}), so it can never start.', selfLoop: 'A step cannot depend on itself.',
      danglingEdge: 'A connection leads to a step that is gone.', noteEdge: 'Notes cannot be connected.', duplicateEdge: 'The same connection is drawn twice.',
      badPlaceholder: '{text}: {message}', refUnknownStep: '{text} names no step.', refSelf: '{text} is this step\'s own result.',
      refNotUpstream: '{text}: step {ref} is not upstream of this one. Connect it before this step.',
      refLater: '{text}: step {ref} runs after this one (it depends on it), so its result is not there yet.',
      refLastFirst: '{text}: there is no step before the first one.', refLastNotUpstream: '{text}: the previous step ({ref}) is not upstream of this one.',
      undeclaredInput: '{text}: the flow has no input {name}. Declare it under Inputs.', undeclaredFile: '{text}: the flow has no input {name}. Declare it as a file input.',
      missingArg: 'The argument {name} is required.', server: '',
    },
  },
}

const zh: typeof en = {
  flows: {
    title: '流程',
    publish: '发布',
    unpublish: '取消发布',
    list: {
      mine: '我的流程', templates: '模板', search: '搜索流程', new: '新建流程', published: '已发布', draft: '草稿',
      noDescription: '暂无描述。', steps: '{n} 个步骤', copyHint: '另存为新的草稿', confirmDelete: '删除流程「{name}」？其运行记录会保留。',
      empty: '还没有保存的流程。', emptyHint: '在画布上搭建一个，或从模板开始。', browse: '浏览模板',
      templatesHint: '基于 weft 内置工具的现成流程，已连好线并带运行表单。打开后按需调整，保存为你自己的版本。',
      use: '使用模板', missingTools: '此服务器缺少：{tools}',
    },
    builder: {
      back: '返回流程列表', untitled: '未命名流程', namePlaceholder: '流程名称', new: '尚未保存', saving: '保存中…', unsaved: '有未保存的修改',
      saved: '已保存 · 修订 {rev}', savedNow: '已保存', undo: '撤销（Ctrl/⌘+Z）', redo: '重做（Shift+Ctrl/⌘+Z）', tidy: '整理布局',
      inputs: '输入', problems: '{n} 个问题', valid: '有效', run: '运行', configure: '配置', settings: '流程', name: '名称',
      description: '描述', descriptionHint: '流程做什么。它会成为运行的目标，可以引用输入。',
      noInputs: '没有输入：流程按原样运行。', publishing: '发布', notPublished: '草稿：只能由人运行。',
      publishedAs: '已发布：对话可以用工具 {tool} 调用它。', copy: '保存副本', stats: '画布',
      counts: '{steps} 个步骤，{edges} 条连线，{notes} 张便签', plan: '编译后的计划（实际运行的内容）', flow: '流程',
      keys: '从左侧面板拖入工具；把步骤右侧的箭头连到下一步左侧的色条。Delete 删除所选；Ctrl/⌘+Z 撤销，Shift+Ctrl/⌘+Z 重做，Ctrl/⌘+D 复制，Ctrl/⌘+S 保存。',
      fixFirst: '流程有 {n} 个问题，请先修正再保存（已在画布上标出）。', needName: '请为流程命名。',
      overwrite: '用我的版本覆盖', reload: '重新加载对方的版本', rebuilt: '此流程保存时没有画布：画布已根据其计划自动排布。',
      emptyTitle: '空白画布', emptyHint: '从左侧面板拖入工具，或从模板开始。', fromTemplate: '从模板开始',
    },
    palette: { title: '节点', search: '搜索工具', none: '没有匹配的工具。', hint: '拖到画布上，或点击添加。' },
    groups: {
      canvas: '画布', read: '读取与搜索', write: '写入与编辑', shell: '命令行', web: '网络', people: '人工', agents: '智能体',
      memory: '记忆', mcp: 'MCP', mcpServer: 'MCP · {server}', other: '其他工具',
    },
    note: { title: '便签', placeholder: '写点批注…', hint: '画布上的批注，不会运行。' },
    node: { duplicate: '复制', delete: '删除', needsApproval: '运行前等待审批' },
    edge: { delete: '删除连线' },
    canvas: { snapOn: '吸附到网格', snapOff: '取消网格吸附', bgOn: '显示点阵背景', bgOff: '隐藏点阵背景' },
    config: {
      step: '步骤', label: '标题', stepId: '步骤 id', stepIdHint: '其他步骤通过这个 id 引用它的结果。可用字母、数字、_ 和 -。',
      requiresApproval: '运行此步骤前请求批准', args: '参数', form: '表单', noArgs: '此工具没有参数。',
      unknownTool: '服务器上没有工具 {tool}：在它可用之前流程无法运行。', extraArgs: '工具未声明的参数：{names}',
      editJSON: '以 JSON 编辑', argsObject: '参数必须是 JSON 对象', about: '关于 {tool}', lastRun: '上次运行',
      required: '必填', notSet: '（未设置）', default: '默认：{value}', clearPlaceholder: '改用具体值', addItem: '添加',
      removeItem: '移除', badJSON: '不是有效的 JSON：{error}',
    },
    picker: {
      title: '插入输入或步骤结果', inputs: '输入', steps: '上游步骤', others: '其他步骤', connect: '连线',
      connectHint: '先把那个步骤连到当前步骤，再插入其结果', noInputs: '尚未声明输入（工具栏中的「输入」）。',
      noSteps: '当前步骤之前没有连接任何步骤。', file: '文件', whole: '占位符会替换整个值并保留其类型。',
    },
    inputs: {
      title: '流程的输入', rows: '输入', body: '运行流程时需要填写的内容，也是已发布流程的工具 Schema。步骤以 inputs.x 占位符使用输入 x。',
      name: '名称', type: '类型', titleCol: '显示名', default: '默认值', required: '必填', description: '说明（显示在运行表单中）',
      options: '可选值，每行一个', add: '添加输入', none: '还没有输入。', usedNotDeclared: '步骤用到但未声明：',
      fileHint: '运行表单会请求一个文件；步骤以整个值 file:{name}（前面加 at 符号）使用它。',
      dirHint: '服务器为每次运行创建一个共享目录；步骤以 file:{name}（前面加 at 符号）使用它。',
      tooRich: '此 Schema 超出了表格能表达的范围：请以 JSON 编辑。', notObject: 'Schema 必须是 JSON 对象。',
      types: { string: '文本', text: '长文本', number: '数字', integer: '整数', boolean: '是/否', array: '文本列表', object: '对象（JSON）', file: '文件', directory: '共享目录', json: 'JSON' },
      problem: { name: '名称以字母或 _ 开头，只能包含字母、数字、_ 和 -。', duplicate: '有两个输入同名。', default: '默认值不是此类型的有效 JSON。', options: '此类型的可选值必须是数字。' },
    },
    run: {
      title: '运行 {name}', start: '运行', starting: '启动中…', noInputs: '此流程没有输入。', review: '运行前让我审阅计划',
      missing: '请先填写：{names}', wrongType: '必须是{type}', filePath: '服务器上的路径', autoDir: '由服务器为每次运行创建。',
      panel: '运行', cancel: '取消', planWaits: '计划等待你审阅。', approvePlan: '批准并运行', stepWaits: '步骤 {step} 等待批准',
      approveStep: '批准此步骤', args: '将使用的参数', permission: '{tool} 请求权限', checkpoint: '确认不可逆操作：{tool}',
      allow: '允许', deny: '拒绝', confirm: '确认', steps: '步骤', noSteps: '还没有步骤。', results: '执行结果', final: '最终结果',
      history: '此流程的近期运行', reused: '复用',
    },
    runStatus: {
      starting: '启动中', planning: '规划中', awaiting_plan: '等待审阅', awaiting_approval: '等待批准', running: '运行中',
      completed: '已完成', failed: '失败', cancelled: '已取消', interrupted: '已中断',
    },
    stepStatus: { pending: '等待中', running: '运行中', awaiting: '等待批准', completed: '完成', failed: '失败', skipped: '已跳过', cancelled: '已取消' },
    dock: {
      title: '与此流程对话', sub: '模型可以用工具 run_current_flow 运行「{name}」。', empty: '请它做这个流程能做的事；未保存的修改会先自动保存。',
      placeholder: '消息（Enter 发送）', reset: '新对话', showRun: '在画布上显示这次运行',
      unsupported: '此服务器尚不能把流程作为工具交给对话（run_current_flow 是待添加的 API：见 docs/ui.md）。',
    },
    guard: {
      leave: '此流程有未保存的修改。离开并丢弃它们吗？', deleteDirty: '删除流程「{name}」，并丢弃未保存的修改？',
    },
    server: {
      missing: '请填写必填输入：{names}。', missingInput: '输入 {name} 为必填。',
      inputType: '输入 {name} 必须是 {want}，而不是 {got}。', nameRequired: '流程需要一个名称。',
      nameTooLong: '名称长 {n} 个字符，最多允许 {max} 个。',
      conflict: '有人在此期间保存了这个流程（修订 {rev}；你的修改基于 {mine}）。',
      notPublished: '流程尚未发布：请先发布。', notFound: '该流程已不存在。',
      requiredUndeclared: '输入 Schema 要求 {name}，但没有声明它。', schemaBroken: '输入 Schema 不是有效的 JSON Schema：{error}',
      unknownDependency: '它依赖一个不存在的步骤（{id}）。',
    },
    problem: {
      empty: '流程没有步骤。', tooMany: '流程有 {count} 个步骤，最多允许 {limit} 个。', noTool: '此步骤没有工具。',
      unknownTool: '服务器上没有工具 {tool}。', idEmpty: '步骤需要一个 id。', idChars: 'id {id} 只能使用字母、数字、_ 和 -。',
      idDigits: 'id {id} 是数字；id 需要包含字母（数字表示位置）。', idLong: 'id 超过 128 个字符。',
      idDuplicate: '另一个步骤已使用 id {id}。', cycle: '步骤形成了环：{path}。请删除其中一条连线。',
      afterCycle: '此步骤依赖一个环（{path}），永远无法开始。', selfLoop: '步骤不能依赖自身。',
      danglingEdge: '有连线指向已不存在的步骤。', noteEdge: '便签不能连线。', duplicateEdge: '同一条连线画了两次。',
      badPlaceholder: '{text}：{message}', refUnknownStep: '{text} 没有对应的步骤。', refSelf: '{text} 是此步骤自己的结果。',
      refNotUpstream: '{text}：步骤 {ref} 不在此步骤的上游。请把它连到此步骤之前。',
      refLater: '{text}：步骤 {ref} 在此步骤之后运行（它依赖此步骤），其结果此时还不存在。',
      refLastFirst: '{text}：第一个步骤之前没有步骤。', refLastNotUpstream: '{text}：上一个步骤（{ref}）不在此步骤的上游。',
      undeclaredInput: '{text}：流程没有输入 {name}。请在「输入」中声明。', undeclaredFile: '{text}：流程没有输入 {name}。请把它声明为文件输入。',
      missingArg: '参数 {name} 为必填。', server: '',
    },
  },
}

i18n.global.mergeLocaleMessage('en', en)
i18n.global.mergeLocaleMessage('zh', zh)
