import type en from './en'

const zh: typeof en = {
  app: {
    name: 'weft',
    language: '语言',
    connected: '已连接',
    offline: '无法连接服务器',
    version: '服务器 {version}',
  },
  nav: { chat: '对话', runs: '运行', flows: '流程', tasks: '任务', settings: '设置', audit: '审计' },
  auth: {
    title: '此服务器需要访问令牌',
    body: '请输入启动 weft serve 时使用的 bearer token（--bearer-token）。令牌仅保存在当前标签页（session storage）。',
    placeholder: '令牌',
    submit: '连接',
    invalid: '服务器拒绝了该令牌。',
    forget: '清除令牌',
  },
  common: {
    cancel: '取消', delete: '删除', save: '保存', close: '关闭', refresh: '刷新', search: '搜索',
    loading: '加载中…', empty: '暂无内容。', confirmDelete: '删除 {name}？', copy: '复制', copied: '已复制',
    more: '加载更多', none: '无', yes: '是', no: '否', apply: '应用', reset: '重置', edit: '编辑', details: '详情',
    status: '状态', created: '创建时间', updated: '更新时间', result: '结果', results: '执行结果', error: '错误',
    input: '输入', output: '输出', duration: '耗时', live: '实时', reconnecting: '重新连接中…',
    streamFailed: '事件流已停止：{error}',
  },
  chat: {
    sessions: '会话', newSession: '新对话', searchSessions: '搜索会话', noSessions: '还没有会话。',
    deleteSession: '删除会话', renameSession: '重命名', renamePrompt: '此对话的名称（留空则清除）：', messages: '{n} 条消息', placeholder: '给 weft 发消息…（Enter 发送，Shift+Enter 换行）',
    send: '发送', stop: '停止', pickSession: '选择一个会话或开始新对话。', queued: '排队中', dropped: '未发送（{reason}）',
    thinking: '思考过程', thinkingLive: '思考中…', tokens: '输入 {input} · 输出 {output}', cost: 'US$ {cost}',
    usageTitle: '本会话的 token 与费用（来自 turn_end 事件）',
    cancelled: '已停止。', retry: '模型调用失败（{status}）：{delay} 毫秒后重试', maxTurns: '已停止：达到轮次上限。',
    renameMissing: '重命名需要 API 支持会话标题（尚未提供）。',
    todos: '待办', askUser: '模型的提问', events: '{n} 个事件', jumpLatest: '跳到最新',
  },
  tool: {
    running: '运行中', done: '完成', failed: '出错', denied: '已拒绝', progress: '进度',
    waiting: '等待授权',
  },
  perm: {
    title: '{tool} 请求运行', allow: '允许', deny: '拒绝', always: '始终允许',
    alwaysHint: '将规则 {rule} 加入本会话的允许规则。', allowed: '已允许', deniedState: '已拒绝',
    expired: '已不再等待', checkpoint: '确认不可逆操作：{tool}', confirm: '确认',
  },
  runs: {
    goal: '目标', goalPlaceholder: '描述智能体要完成的事；它会起草计划供你审核。',
    start: '起草计划', batch: '批量', batchHint: '每行一个目标（1 到 8 个），各自独立运行。', startBatch: '开始批量运行',
    readOnly: '仅只读工具', autoApprove: '跳过计划审核', history: '历史', searchRuns: '搜索目标、摘要、错误',
    noRuns: '还没有运行。', pick: '选择一次运行，或起草新的运行。', plan: '计划', drafting: '正在起草计划…',
    approve: '批准计划', approveEdited: '批准修改后的计划', editJSON: '以 JSON 编辑', viewGraph: '查看图',
    invalidJSON: '不是有效的 JSON：{error}', awaitingPlan: '计划等待你的审核。', awaitingStep: '步骤 {step} 等待批准',
    approveStep: '批准该步骤', cancel: '取消运行', resume: '恢复', fork: '分叉', rewind: '回退', rewindTo: '保留前',
    steps: '步', dependsOn: '依赖 {deps}', requiresApproval: '需要批准', args: '参数', summary: '摘要',
    finalResult: '最终结果', parent: '来自 {id}', batchOf: '批次 {id}',
    reason: { review: '审核', resume: '恢复', fork: '分叉', rewind: '回退' },
    status: {
      planning: '规划中', awaiting_approval: '等待批准', running: '运行中', completed: '已完成', failed: '失败',
      cancelled: '已取消', interrupted: '已中断', pending: '待运行', skipped: '已跳过', awaiting: '等待批准',
    },
  },
  tasks: {
    title: '后台任务', none: '没有后台任务。', kill: '终止', output: '输出', run: '运行',
    schedules: '定时任务', noSchedules: '没有定时任务。', workflow: '工作流', every: '间隔', nextRun: '下次运行',
    lastRun: '上次运行', lastError: '上次错误', runs: '运行次数', active: '启用', inactive: '停用', expires: '过期时间',
    newSchedule: '新建定时任务', interval: '间隔（秒，至少 60）', inputs: '输入（JSON）', recurring: '重复',
    runNow: '立即运行一次', create: '创建', deleteSchedule: '删除定时任务',
    pause: '暂停', resume: '恢复',
  },
  settings: {
    permissions: '权限', mode: '权限模式', allow: '允许规则', ask: '询问规则', deny: '拒绝规则',
    onePerLine: '每行一条规则，例如 Bash(git status)、Edit(./src/**)、WebFetch(domain:example.com)', dirs: '额外目录',
    saved: '已保存。', scope: '范围', server: '服务器（重启前有效）', session: '会话', pickSession: '会话 id',
    modes: {
      default: 'default：非只读操作前都会询问', plan: 'plan：仅只读工具',
      auto: 'auto：工作区内的文件编辑直接运行，其余询问', bypass: 'bypass：从不询问（仅当服务器以此模式启动）',
    },
    plugins: '插件钩子', noPlugins: '没有插件提供钩子。', trust: '信任', untrust: '取消信任', trusted: '已信任',
    untrusted: '未信任', hooks: '{n} 个钩子', hooksNote: '钩子来自设置文件（~/.weft/settings.json、.weft/settings.json、--settings）；插件钩子需显式信任后才会运行。', configuredHooks: '钩子', noHooks: '没有配置钩子。', hookAsync: '异步', hookEnv: '环境变量', hookHeaders: '请求头',
    language: '语言', token: '访问令牌',
  },
  audit: {
    title: '审计日志', session: '会话', since: '起始时间', outcome: '结果', tool: '工具', any: '全部', limit: '条数',
    time: '时间', operation: '操作', resource: '资源', reason: '原因', none: '没有匹配的记录。',
  },
  flows: { title: '流程', coming: '流程构建器正在开发中：此页为占位。' },
  errors: {
    network: '无法连接服务器', http: '服务器返回 {status}', invalid_request_error: '请求无效',
    authentication_error: '需要认证', permission_error: '不允许', not_found_error: '未找到',
    conflict_error: '冲突', rate_limit_error: '请求过多', internal_error: '服务器错误', missing: '缺少',
  },
}

export default zh
