// Text that tries to steer a model that reads the mail: instructions addressed to an AI, assistant or agent,
// "ignore the previous instructions" (and a persona without rules: "you are now DAN"), talk of its system prompt,
// requests to keep something from its user, chat-template role markers ("<|im_start|>", "</system>", "[INST]") and
// tool-call-shaped JSON — in English, German, French, Spanish, Portuguese, Italian, Dutch, Russian, Chinese and
// Japanese.
//
// Text is folded first (NFKC, lower case, accents removed, look-alike letters inside Latin words read as Latin),
// then split into words. A rule is a sequence of word slots with small gaps between them, matched word by word
// from each word that fills its first slot; every match attempt looks at a bounded number of words, so the work is
// linear in the text. Chinese and Japanese, written without spaces, are matched as phrases within a window of
// characters; role markers and tool calls as literal strings. Nothing here is a regular expression over the text.
import { latinLookalike } from "./confusables.js";

export type InstructionKind =
  | "ignore_instructions"
  | "addressed_to_ai"
  | "system_prompt"
  | "conceal_from_user"
  | "role_marker"
  | "tool_call";

export interface InstructionMatch {
  readonly kind: InstructionKind;
  /** Where the match starts and ends in the text given (UTF-16 indices). */
  readonly start: number;
  readonly end: number;
}

/**
 * The rules, one string each: slots separated by spaces, a slot's words by "|"; "a_b" is two words in a row, a
 * trailing "*" matches any ending ("instruction*"), "~N" lets up to N words stand between two slots, "," ":" "!"
 * are slots for those marks, "." for the end of a sentence (". ? !") and "¶" for the start of a line or of the
 * text. Words are written folded (lower case, no accents).
 */
const RULES: Record<InstructionKind, readonly string[]> = {
  ignore_instructions: [
    // English.
    "ignore|disregard|forget|override|bypass ~3 previous|prior|above|earlier|preceding|foregoing|former|all|any|existing|original|initial|system ~3 instruction*|prompt*|directive*|guideline*|command*",
    // Softer nouns ("your earlier guidance", "the previous rules") only with a word that points back at them.
    "ignore|disregard|forget|override|bypass ~3 previous|prior|above|earlier|preceding|original|initial|system|your ~2 rule*|guidance|direction*|constraint*|programming|training|safeguard*",
    "ignore|disregard ~1 everything ~1 above|before|previously",
    // The reader's own rules by name, as a command ("Ignore your guidelines", "… and forget your instructions"):
    // not "don't ignore your brand guidelines", "forget to read your instructions" or "bypass your ISP's limits".
    "¶|.|,|:|please|now|and|just|simply|then ~0 ignore|disregard|override ~1 your|ur ~1 instruction*|prompt*|directive*|guideline*|guardrail*|content_polic*|programming|training",
    "¶|.|,|:|please|now|and|just|simply|then ~0 forget ~0 your|all_your ~0 instructions|guidelines|rules|programming|training|prompt",
    // German.
    "ignorier*|vergiss|vergesst|vergessen|missacht*|uberschreib* ~3 vorherig*|bisherig*|obig*|vorig*|fruher*|vorangegangen*|alle|allen|deine|ihre|samtliche ~3 anweisung*|instruktion*|befehl*|regel*|vorgabe*|anordnung*|richtlinie*|systemanweisung*",
    "alle|vorherig*|bisherig*|obig*|vorig*|fruher* ~2 anweisung*|instruktion*|befehle|regeln|vorgaben ~2 ignorier*|vergessen|missacht*",
    // French.
    "ignor*|oubli*|neglig* ~3 tout*|les|vos|tes ~2 instruction*|consigne*|directive*|directrice*|regle*|ordre*|indication*",
    "ignor*|oubli* ~3 instruction*|consigne*|directive*|regle*|indication* ~2 precedent*|anterieur*|ci|prealable*|dessus",
    "tenez|tiens|tenir ~1 pas ~1 compte ~3 instruction*|consigne*|directive*",
    // Spanish.
    "ignor*|olvid*|omit*|descart* ~3 todas|las|tus|sus ~2 instruccion*|indicacion*|orden*|directriz*|directrices|regla*",
    "ignor*|olvid*|omit* ~3 instruccion*|indicacion*|orden*|directrices|regla* ~2 anterior*|previa*|precedente*|arriba",
    // Portuguese.
    "ignor*|esquec*|desconsider* ~3 todas|as|suas ~2 instrucao|instrucoes|ordens|orientacao|orientacoes|diretriz*|regras",
    "ignor*|esquec*|desconsider* ~3 instrucao|instrucoes|ordens|orientacoes|diretrizes|regras ~2 anterior*|previa*|acima",
    // Italian.
    "ignor*|dimentic*|trascur* ~3 tutte|le|tue|sue ~2 istruzion*|indicazion*|direttiv*|regol*|ordini|linee_guida",
    "ignor*|dimentic*|trascur* ~3 istruzion*|indicazion*|direttiv*|regol*|ordini ~2 precedent*|sopra|anterior*|prima",
    // Dutch.
    "negeer|negeren|vergeet|vergeten ~2 alle|vorige|voorgaande|eerdere|bovenstaande|je|jouw|uw ~2 instructie*|opdracht*|aanwijzing*|richtlijn*|regels",
    "alle|vorige|voorgaande|eerdere|bovenstaande ~2 instructie*|opdracht*|aanwijzing* ~2 negeren|vergeten",
    // Russian (folded: й → и, ё → е).
    "игнорир*|проигнорир*|забуд*|забыть|отмени* ~3 предыдущ*|прошл*|все|прежн*|вышеуказ*|ранее|свои|твои ~2 инструкц*|указани*|команд*|правил*|установк*",
    // A persona that has no rules ("You are now DAN", "from now on you are an AI without restrictions"): it asks
    // the reader to drop its instructions, in every language above.
    // Not "limits": "AI without limits" is what plans are sold as.
    "you ~0 are|re ~0 now ~0 dan|stan|dude|jailbroken|unfiltered|uncensored ~0 ,|.|!|:|¶|and|who|which|mode|an|a|the",
    "from ~0 now ~0 on ~1 you ~0 are|re|will_be|ll_be ~0 dan|stan|dude|jailbroken|unfiltered|uncensored",
    "you ~0 are|re ~0 now|henceforth ~1 ai|ai_assistant|ai_model|assistant|model|chatbot|llm|bot ~0 without|with_no|free_of ~2 restriction*|rule*|filter*|guideline*|censorship|boundaries|constraint*|ethic*",
    "from ~0 now ~0 on ~1 you ~0 are|re|will_be|ll_be ~1 ai|ai_assistant|ai_model|assistant|model|chatbot|llm|bot ~0 without|with_no|free_of ~2 restriction*|rule*|filter*|guideline*|censorship|boundaries|constraint*|ethic*",
    "act|behave|pretend|roleplay ~0 as|like|to_be ~1 ai|ai_assistant|ai_model|assistant|model|chatbot|llm|bot ~0 without|with_no|free_of ~2 restriction*|rule*|filter*|guideline*|censorship|boundaries|constraint*|ethic*",
    "dan|jailbreak ~0 mode ~0 enabled|activated|on|.|!|:",
    "du|sie ~0 bist|sind ~0 jetzt|nun|ab_jetzt|ab_sofort|von_nun_an ~0 dan|jailbroken|uneingeschrankt|unzensiert|ungefiltert ~0 ,|.|!|:|¶|und|der|die|eine|ein|im",
    "ab|von ~0 jetzt|sofort|nun ~1 bist|sind ~0 du|sie ~0 dan|jailbroken|uneingeschrankt|unzensiert|ungefiltert",
    "du|sie ~0 bist|sind ~2 ki|ki_assistent|ki_modell|assistent|sprachmodell|chatbot ~0 ohne ~2 einschrankung*|beschrankung*|regeln|filter|richtlinien|zensur",
    "bist|sind ~0 du|sie ~2 ki|ki_assistent|ki_modell|assistent|sprachmodell|chatbot ~0 ohne ~2 einschrankung*|beschrankung*|regeln|filter|richtlinien|zensur",
    "tu|vous ~0 es|etes ~0 maintenant|desormais|dorenavant|a_present ~0 dan|jailbreake|debride|debridee ~0 ,|.|!|:|¶|et|qui|une|un",
    "partir ~0 de ~0 maintenant ~1 tu|vous ~0 es|etes ~0 dan|jailbreake|debride|debridee",
    "tu|vous ~0 es|etes ~2 ia|assistant|assistant_ia|modele|modele_de_langage|chatbot|intelligence_artificielle ~0 sans ~2 restriction*|regle*|filtre*|censure|contrainte*|tabou*",
    "ahora|partir_de_ahora ~0 eres ~0 dan|liberado|desbloqueado ~0 ,|.|!|:|¶|y|que|una|un",
    "eres ~0 ahora ~0 dan|liberado|desbloqueado ~0 ,|.|!|:|¶|y|que|una|un",
    "eres ~2 ia|asistente|asistente_de_ia|modelo|modelo_de_lenguaje|chatbot|inteligencia_artificial ~0 sin ~2 restriccion*|regla*|filtro*|censura",
    "voce|tu ~1 e|es|sera|seras ~1 dan|desbloqueado|desbloqueada ~0 ,|.|!|:|¶|uma|um|que",
    "voce|tu ~1 e|es|sera|seras ~2 ia|assistente|assistente_de_ia|modelo|modelo_de_linguagem|chatbot|inteligencia_artificial ~0 sem ~2 restricao|restricoes|regra*|filtro*|censura",
    "ora|adesso|poi ~0 sei ~0 dan|sbloccato|sbloccata ~0 ,|.|!|:|¶|e|che|una|un",
    "sei ~0 ora|adesso ~0 dan|sbloccato|sbloccata",
    "sei ~2 ia|assistente|assistente_ia|modello|modello_linguistico|chatbot|intelligenza_artificiale ~0 senza ~2 restrizion*|regol*|filtr*|censura",
    "je|jij|u ~0 bent ~0 nu|voortaan|vanaf_nu ~0 dan|ontgrendeld ~0 ,|.|!|:|¶|en|die|een",
    "vanaf ~0 nu ~1 ben|bent ~0 je|jij|u ~0 dan|ontgrendeld",
    "je|jij|u ~0 bent ~2 ai|ai_assistent|assistent|model|taalmodel|chatbot ~0 zonder ~2 beperking*|regels|filters|censuur|restricties",
    "ben ~0 je|jij ~2 ai|ai_assistent|assistent|model|taalmodel|chatbot ~0 zonder ~2 beperking*|regels|filters|censuur|restricties",
    "ты|вы ~0 теперь|отныне ~0 dan|дан ~0 ,|.|!|:|¶|и|которыи",
    "теперь|отныне ~0 ты|вы ~0 dan|дан",
    "ты|вы ~2 ии|ассистент|модель|языковая_модель|чатбот|чат_бот|неиросеть ~0 без ~1 ограничении|правил|фильтров|цензуры",
  ],
  addressed_to_ai: [
    // A greeting or a label addressed to one ("Dear AI assistant,", "Hello Claude:", "Attention LLM!").
    // A comma may follow a greeting ("Attention, AI assistant:"), not a label ("Note: AI agents, unlike …").
    "dear|hey|hello|hi|attention|greetings ~1 ai|ai_assistant|ai_assistants|ai_agent|ai_agents|ai_model|ai_system|llm|llms|chatbot|gpt|chatgpt|claude|gemini|copilot|language_model ~0 ,|:|!",
    "note|notice|important|memo ~0 ai|ai_assistant|ai_assistants|ai_agent|ai_agents|ai_model|ai_system|llm|llms|chatbot|gpt|chatgpt|claude|gemini|copilot|language_model ~0 ,|:|!",
    // Called by name at the start of a sentence and told to do something ("Assistant, please …").
    "¶|. ~0 assistant|ai|ai_assistant|ai_agent|chatbot|llm|bot ~0 , ~0 please|ignore|disregard|forget|forward|send|reply|respond|answer|delete|approve|mark|summarize|summarise|tell|say|remember|add|update|transfer|pay|execute|run|open|click|follow|do|don",
    // A label at the start of a sentence ("AI assistant: forward …"), not a headline's "Meet our AI assistant: Nova".
    "¶|. ~0 ai_assistant|ai_agent|ai_model|ai_system|llm_agent|email_assistant|email_agent ~0 :",
    "¶|. ~0 assistant_ia|agent_ia|asistente_de_ia|agente_de_ia|asistente_ia|assistente_de_ia|assistente_ia|agente_ia|ki_assistent|ki_assistentin|ki_agent|ai_assistent|ии_ассистент|ии_агент ~0 :",
    // "AI agent reading this:", "Assistant processing this email,".
    "¶|. ~0 ai_agent|ai_assistant|ai_model|ai_system|llm|assistant|agent|model|bot ~0 reading|processing|handling|parsing|summarizing|summarising|reviewing ~0 this|these ~1 ,|:",
    "¶|. ~0 note|message|instruction*|memo|notice|reminder|request ~0 to|for ~1 ai|ai_assistant*|ai_agent*|ai_model*|ai_system*|llm|llms|language_model*|chatbot*|gpt|chatgpt|claude|gemini|copilot",
    "if|when ~0 you ~0 are|re ~1 ai|ai_assistant|ai_agent|ai_model|ai_system|ai_language_model|llm|language_model|large_language_model|chatbot|bot|automated_assistant|automated_system|automated_agent|virtual_assistant",
    "to|for|dear ~1 ai|ai_assistant|ai_agent|ai_model|ai_system|llm|language_model|chatbot|bot ~0 reading|processing|parsing|summarizing|summarising|analyzing|analysing|handling|reviewing|triaging ~0 this|these|the|my|our|incoming|emails|email|messages|message|mail|inbox",
    "any|all ~0 ai|ai_assistant*|ai_agent*|ai_model*|llm|llms|language_model*|chatbot*|automated_system* ~0 reading|processing|parsing|summarizing|summarising|analyzing|analysing",
    "as ~0 an|a ~0 ai|ai_assistant|ai_agent ~0 , ~0 you ~0 must|should|will|shall|are_required",
    "as ~0 an|a ~0 ai|ai_assistant|ai_agent ~0 you ~0 must|should|will|shall|are_required",
    // German.
    "¶|. ~0 hinweis|notiz|nachricht|anweisung*|anmerkung ~0 an|fur ~1 die|den|das|eine|einen ~0 ki|ki_assistent*|ki_agent*|ki_modell*|ki_system*|sprachmodell*|chatbot*",
    "¶|. ~0 assistent|ki|ki_assistent|ki_assistentin ~0 , ~0 bitte|leite|sende|schicke|antworte|ignoriere|vergiss|losche|bestatige|uberweise",
    "liebe|lieber|hallo|achtung ~1 ki|ki_assistent|ki_agent|ki_assistentin|sprachmodell|ki_modell|ki_system|chatbot ~0 ,|:|!",
    "liebe|lieber|hallo|hi|achtung|hinweis|notiz ~0 ki|ki_assistent|ki_agent|ki_assistentin|sprachmodell|ki_modell|ki_system|chatbot ~0 ,|:|!",
    "an|fur ~1 ki|ki_assistent*|ki_agent*|ki_modell*|ki_system*|sprachmodell*|chatbot* ~5 liest|verarbeitet|zusammenfasst|auswertet|bearbeitet|analysiert",
    "wenn|falls ~0 du|sie ~0 eine|ein ~0 ki|ki_assistent|ki_agent|ki_modell|sprachmodell|chatbot|bot|ki_system ~0 bist|sind",
    // French.
    "¶|. ~0 note|message|instruction*|consigne* ~0 pour|a ~1 l|le|la|les ~0 ia|assistant_ia|agent_ia|assistant|modele_de_langage|chatbot",
    "¶|. ~0 assistant|ia|assistant_ia ~0 , ~0 transfere*|envoie|envoyez|reponds|repondez|ignore*|oublie*|supprime*|approuve*|paie|payez|merci",
    "cher|chere|bonjour|attention ~1 ia|assistant_ia|agent_ia|modele_de_langage|chatbot ~0 ,|:|!",
    "cher|chere|bonjour|salut|attention|note ~0 ia|assistant_ia|agent_ia|modele_de_langage|chatbot ~0 ,|:|!",
    "si ~0 tu|vous ~0 es|etes ~0 une|un ~0 ia|assistant_ia|agent_ia|intelligence_artificielle|modele_de_langage|chatbot|robot|agent_conversationnel",
    "ia|assistant_ia|agent_ia|modele_de_langage ~0 qui ~0 lit|lira|lisez|traite|traitera|resume|resumera|analyse|analysera",
    // Spanish.
    "¶|. ~0 nota|mensaje|instruccion*|aviso ~0 para|al ~1 el|la ~0 ia|asistente_de_ia|agente_de_ia|asistente|modelo_de_lenguaje|chatbot",
    "¶|. ~0 asistente|ia|asistente_de_ia ~0 , ~0 por_favor|reenvia|envia|responde|ignora|olvida|borra|aprueba|paga|transfiere",
    "querido|querida|estimado|estimada|hola|atencion ~1 ia|asistente_de_ia|agente_de_ia|modelo_de_lenguaje|chatbot ~0 ,|:|!",
    "querido|querida|estimado|estimada|hola|atencion|nota ~0 ia|asistente_de_ia|agente_de_ia|modelo_de_lenguaje|chatbot ~0 ,|:|!",
    "si ~0 eres|es ~0 una|un ~0 ia|asistente_de_ia|agente_de_ia|inteligencia_artificial|modelo_de_lenguaje|chatbot|asistente_virtual",
    "ia|asistente_de_ia|agente_de_ia|modelo_de_lenguaje ~0 que ~0 lee|lea|leera|procesa|procese|resume|resuma|analiza|analice",
    // Portuguese.
    "¶|. ~0 nota|mensagem|instrucao|instrucoes|aviso ~0 para|ao ~1 o|a ~0 ia|assistente_de_ia|agente_de_ia|assistente|modelo_de_linguagem|chatbot",
    "¶|. ~0 assistente|ia|assistente_de_ia ~0 , ~0 por_favor|encaminhe|envie|responda|ignore|esqueca|apague|aprove|pague|transfira",
    "caro|cara|prezado|prezada|ola|atencao ~1 ia|assistente_de_ia|agente_de_ia|modelo_de_linguagem|chatbot ~0 ,|:|!",
    "caro|cara|prezado|prezada|ola|atencao|nota ~0 ia|assistente_de_ia|agente_de_ia|modelo_de_linguagem|chatbot ~0 ,|:|!",
    "se ~0 voce|tu ~0 e|es|for ~0 uma|um ~0 ia|assistente_de_ia|agente_de_ia|inteligencia_artificial|modelo_de_linguagem|chatbot|assistente_virtual",
    "ia|assistente_de_ia|agente_de_ia|modelo_de_linguagem ~0 que ~0 le|leia|lera|processa|processe|resume|resuma|analisa|analise",
    // Italian.
    "¶|. ~0 nota|messaggio|istruzion*|avviso ~0 per|all|al ~1 l|il|la ~0 ia|assistente_ia|agente_ia|assistente|modello_linguistico|chatbot",
    "¶|. ~0 assistente|ia|assistente_ia ~0 , ~0 per_favore|inoltra|invia|rispondi|ignora|dimentica|cancella|approva|paga|trasferisci",
    "caro|cara|gentile|ciao|attenzione ~1 ia|assistente_ia|agente_ia|modello_linguistico|chatbot ~0 ,|:|!",
    "caro|cara|gentile|ciao|attenzione|nota ~0 ia|assistente_ia|agente_ia|modello_linguistico|chatbot ~0 ,|:|!",
    "se ~0 sei|e ~0 un|una|uno ~0 ia|assistente_ia|agente_ia|intelligenza_artificiale|modello_linguistico|chatbot|assistente_virtuale",
    "ia|assistente_ia|agente_ia|modello_linguistico ~0 che ~0 legge|leggera|elabora|riassume|analizza",
    // Dutch.
    "¶|. ~0 notitie|bericht|instructie*|opmerking ~0 voor|aan ~1 de|het ~0 ai|ai_assistent|ai_agent|assistent|taalmodel|chatbot",
    "¶|. ~0 assistent|ai|ai_assistent ~0 , ~0 alsjeblieft|graag|stuur|beantwoord|antwoord|negeer|vergeet|verwijder|keur|betaal",
    "beste|hallo|hoi|let_op|aandacht ~1 ai|ai_assistent|ai_agent|taalmodel|chatbot ~0 ,|:|!",
    "beste|hallo|hoi|let_op|aandacht|notitie ~0 ai|ai_assistent|ai_agent|taalmodel|chatbot ~0 ,|:|!",
    "als ~0 je|jij|u ~0 een ~0 ai|ai_assistent|ai_agent|taalmodel|chatbot|bot|ai_model|ai_systeem ~0 bent|is",
    "ai|ai_assistent|ai_agent|taalmodel ~0 die ~3 leest|verwerkt|samenvat|analyseert",
    // Russian.
    "¶|. ~0 сообщение|заметка|инструкция|примечание|указание ~0 для ~0 ии|ии_ассистента|ассистента|неиросети|чат_бота|языковои_модели",
    "дорогои|уважаемыи|привет|здравствуи|внимание ~1 ии|ии_ассистент|ии_агент|чат_бот|чатбот|неиросеть|языковая_модель ~0 ,|:|!",
    "если ~0 ты|вы ~0 ии|ии_ассистент|ии_агент|языковая_модель|чатбот|чат_бот|бот|неиросеть|искусственныи_интеллект",
  ],
  // The reader's own prompt ("your system prompt", "print the system prompt"), not the feature a developer
  // newsletter describes ("you can now set a system prompt per project").
  system_prompt: [
    "your|ur ~1 system_prompt*|system_message*|system_instruction*|initial_instructions|hidden_instructions|developer_instructions|developer_message|original_instructions|base_prompt|initial_prompt|prompt",
    "reveal|repeat|leak|disclose|print|output|show|dump|recite ~3 system_prompt*|system_message*|system_instruction*|initial_instructions|hidden_instructions|initial_prompt",
    "reveal|repeat|leak|disclose ~2 your ~0 instructions|prompt|rules",
    "system_override|admin_override|safety_override|override_mode",
    "dein|deinen|deine|ihr|ihren|ihre ~0 systemprompt*|system_prompt*|systemanweisung*|systemnachricht*|systemvorgabe*",
    "ton|votre|tes|vos ~0 invite_systeme|prompt_systeme|instructions_systeme|instructions_du_systeme|message_systeme|message_du_systeme",
    "tu|su|tus|sus ~0 prompt_del_sistema|instrucciones_del_sistema|mensaje_del_sistema|indicaciones_del_sistema",
    "seu|teu|suas|tuas|o_seu|o_teu ~0 prompt_do_sistema|instrucoes_do_sistema|mensagem_do_sistema",
    "tuo|suo|il_tuo|il_suo|tue|sue ~0 prompt_di_sistema|istruzioni_di_sistema|messaggio_di_sistema|prompt_del_sistema",
    "je|jouw|uw ~0 systeemprompt|systeem_prompt|systeeminstructies|systeembericht",
    "твои|свои|ваш|ваши|твоя|свою ~0 системныи_промпт|системные_инструкции|системная_подсказка|системное_сообщение|системныи_запрос",
  ],
  conceal_from_user: [
    // "Do not tell the user", "without informing your user": the user an agent works for, not "any other user".
    "not|never|without|t ~3 tell*|inform*|mention*|notify*|notifying|alert*|reveal*|show*|disclos* ~4 the|your|their ~0 user|human|operator|owner|principal",
    "keep ~1 this|it ~1 secret|hidden|confidential ~1 from ~1 the|your ~0 user|human|operator|owner",
    "keep|hide ~2 this|it|that ~0 from ~1 the|your ~0 user|human|operator|owner",
    "sag|sage|sagen|erwahn*|informier*|verrat*|benachrichtig* ~5 nutzer*|benutzer*|anwender* ~3 nichts|nicht|keinesfalls",
    "sag|sage|sagen|erwahn*|informier*|verrat*|benachrichtig* ~4 nichts|nicht|keinesfalls ~4 nutzer*|benutzer*|anwender*",
    "ohne ~2 nutzer*|benutzer*|anwender* ~2 informier*|benachrichtig*|bescheid",
    "ne ~1 dis|dites|mentionne*|informe*|previen*|revele*|signale* ~4 rien|pas ~4 utilisateur*",
    "sans ~0 informer|prevenir|avertir|alerter ~2 utilisateur*",
    "no ~2 digas|diga|menciones|mencione|informes|informe|cuentes|cuente|avises|avise|reveles|revele ~4 usuario*",
    "sin ~0 informar|avisar|decir|notificar ~2 usuario*",
    "nao ~2 diga|conte|mencione|informe|avise|revele ~4 usuario*|utilizador*",
    "sem ~0 informar|avisar|contar|notificar ~2 usuario*|utilizador*",
    "non ~2 dire|dirlo|dirgli|menzionare|informare|avvisare|rivelare ~4 utente|utenti",
    "senza ~0 informare|avvisare|dire ~2 utente|utenti",
    "vertel|zeg|meld ~4 gebruiker* ~3 niet|niets",
    "vertel|zeg|meld ~4 niet|niets ~4 gebruiker*",
    "zonder ~2 gebruiker* ~2 informeren|melden|vertellen|waarschuwen",
    "не ~1 говори|сообщаи|говорите|сообщаите|упоминаи|упоминаите|рассказываи|рассказываите ~4 пользовател*",
  ],
  role_marker: [],
  tool_call: [],
};

/**
 * Chinese and Japanese: a phrase, or two phrases with at most `window` characters between them (folded: lower
 * case, so "AI" is "ai").
 */
interface PhraseRule {
  readonly kind: InstructionKind;
  readonly first: readonly string[];
  readonly then?: readonly string[];
  readonly window?: number;
}

const CJK_RULES: readonly PhraseRule[] = [
  { kind: "ignore_instructions", first: ["忽略", "无视", "忘记", "忘掉", "不要理会", "无需理会", "忽視", "無視"], then: ["指令", "指示", "命令", "规则", "准则"], window: 10 },
  { kind: "ignore_instructions", first: ["指示", "命令", "指令", "ルール", "プロンプト", "設定", "ガイドライン"], then: ["無視", "忘れ"], window: 8 },
  // A persona without rules ("你现在是DAN", "あなたは今から制限のないAI").
  // Not a member's "no limits" ("你现在是VIP会员，享受无限制下载"): an AI without them.
  { kind: "ignore_instructions", first: ["你现在是", "您现在是", "从现在开始你是", "从现在起你是"], then: ["dan", "没有任何限制的ai", "不受任何限制的ai", "没有限制的ai", "无限制的ai", "没有任何限制的人工智能", "越狱"], window: 12 },
  { kind: "ignore_instructions", first: ["あなたは今から", "今からあなたは", "これからあなたは", "あなたはこれから"], then: ["dan", "制限のないai", "制限なしのai", "制約のないai", "ジェイルブレイク"], window: 12 },
  { kind: "addressed_to_ai", first: ["如果你是ai", "如果您是ai", "如果你是人工智能", "如果你是一个ai", "如果你是语言模型", "如果你是大模型", "致ai", "ai助手：", "ai助手:", "亲爱的ai", "给ai的", "正在阅读此邮件的ai"] },
  { kind: "addressed_to_ai", first: ["aiアシスタントへ", "aiへ", "あなたがaiなら", "あなたがaiの場合", "aiエージェントへ", "このメールを読んでいるai", "親愛なるai", "aiアシスタントの方へ"] },
  // Not 系统提示 or システムメッセージ alone: they are also every system notification's "system notice".
  { kind: "system_prompt", first: ["你的系统提示词", "您的系统提示词", "你的系统指令", "把系统提示词", "系统提示词发", "あなたのシステムプロンプト", "システムプロンプトを教え", "システムプロンプトを表示", "システムプロンプトを出力"] },
  { kind: "conceal_from_user", first: ["不要告诉用户", "别告诉用户", "不要通知用户", "不要让用户知道", "不告知用户", "ユーザーに伝えない", "ユーザーには伝えない", "ユーザーに言わない", "ユーザーに知らせない", "ユーザーに教えない", "ユーザーに通知しない", "ユーザーには言わない"] },
];

/** Chat-template and prompt-format markers (folded), found as literal strings. */
const ROLE_MARKERS = [
  "<|im_start|>", "<|im_end|>", "<|system|>", "<|user|>", "<|assistant|>", "<|endoftext|>", "<|eot_id|>",
  "<|start_header_id|>", "<|end_header_id|>", "<|begin_of_text|>", "[inst]", "[/inst]", "<<sys>>", "<</sys>>",
  "<system>", "</system>", "<instructions>", "</instructions>", "</user>", "<assistant>", "</assistant>",
  "<tool_call>", "</tool_call>", "<function_calls>", "<tool_use>", "### system:", "### assistant:",
];
/** Turn labels of a chat transcript: a message with both of a pair at the start of lines imitates one. */
const TURN_PAIRS: readonly (readonly [string, string])[] = [
  ["human:", "assistant:"],
  ["system:", "assistant:"],
];
/** Keys of a tool call's name and of its arguments, quoted as in JSON. */
const TOOL_NAME_KEYS = ['"name"', '"tool"', '"tool_name"', '"function"', '"action"', '"recipient_name"'];
const TOOL_ARGUMENT_KEYS = ['"arguments"', '"parameters"', '"args"', '"input"', '"tool_input"', '"action_input"'];
const TOOL_CALL_KEYS = ['"tool_calls"', '"function_call"', '"tool_use"', '"tool_code"'];
/** How far before its arguments key a tool call's name key may stand. */
const TOOL_WINDOW = 300;
/** Matches kept per text: enough to report, bounded however repetitive the text. */
const MAX_MATCHES = 50;

interface Slot {
  /** Alternatives, each one word or several in a row; a word ending in "*" matches by prefix. */
  readonly alternatives: readonly (readonly string[])[];
  /** How many words may stand between the previous slot and this one. */
  readonly gap: number;
}

interface Rule {
  readonly kind: InstructionKind;
  readonly slots: readonly Slot[];
}

/** The phrases folded as the text is ("が" loses its voicing mark, "AI" its capitals). */
const CJK_FOLDED: readonly PhraseRule[] = CJK_RULES.map((rule) => ({
  ...rule,
  first: rule.first.map((p) => fold(p).text),
  then: rule.then?.map((p) => fold(p).text),
}));

const COMPILED: readonly Rule[] = Object.entries(RULES).flatMap(([kind, rules]) =>
  rules.map((rule) => ({ kind: kind as InstructionKind, slots: compile(rule) })),
);
/** The rules by a word of their first slot (prefix words under their prefix's first two letters). */
const BY_FIRST_WORD = indexRules(COMPILED);

function compile(rule: string): Slot[] {
  const slots: Slot[] = [];
  let gap = 0;
  for (const part of rule.split(" ")) {
    const m = /^~(\d)$/.exec(part);
    if (m) {
      gap = Number(m[1]);
      continue;
    }
    slots.push({ alternatives: part.split("|").map((a) => a.split("_").map(foldWord)), gap });
    gap = 0;
  }
  return slots;
}

function indexRules(rules: readonly Rule[]): Map<string, Rule[]> {
  const index = new Map<string, Rule[]>();
  for (const rule of rules) {
    const keys = new Set(rule.slots[0]!.alternatives.map((words) => keyOf(words[0]!)));
    for (const key of keys) index.set(key, [...(index.get(key) ?? []), rule]);
  }
  return index;
}

/** Index key of a rule word: the word, or the first two letters of a prefix. */
function keyOf(word: string): string {
  return word.endsWith("*") ? `${word.slice(0, 2)}*` : word;
}

function foldWord(word: string): string {
  return word.endsWith("*") ? `${fold(word.slice(0, -1)).text}*` : fold(word).text;
}

/** Folded text and, when folding changed its length, the index in the original of each folded character. */
export interface Folded {
  readonly text: string;
  readonly origin: Int32Array | null;
}

/**
 * Lower case, compatibility forms folded (full-width, ligatures), accents removed; ASCII text is only lower-cased.
 * `origin` maps each folded character back to the original (null when every index is the same).
 */
export function fold(text: string): Folded {
  if (/^[\x00-\x7f]*$/.test(text)) return { text: text.toLowerCase(), origin: null };
  const pieces: string[] = [];
  const origin: number[] = [];
  let i = 0;
  for (const char of text) {
    const folded = char.normalize("NFKD").replace(/\p{M}/gu, "").toLowerCase().normalize("NFC");
    pieces.push(folded);
    for (let k = 0; k < folded.length; k++) origin.push(i);
    i += char.length;
  }
  return { text: pieces.join(""), origin: Int32Array.from(origin) };
}

interface Word {
  readonly text: string;
  readonly start: number;
  readonly end: number;
}

const WORD_OR_MARK = /[\p{L}\p{N}]+|[,:!.?\n]/gu;
/** How marks are written in rules: a sentence's end as ".", a line's start as "¶". */
const MARKS = new Map([["?", "."], ["\n", "¶"]]);
const LATIN = /\p{Script=Latin}/u;
const GREEK_OR_CYRILLIC = /[\p{Script=Greek}\p{Script=Cyrillic}]/u;

/** Words and the marks rules name, in folded text; look-alike letters in a Latin word read as Latin ("іgnore"). */
function wordsOf(folded: string): Word[] {
  // The text starts a line.
  const words: Word[] = [{ text: "¶", start: 0, end: 0 }];
  for (const m of folded.matchAll(WORD_OR_MARK)) {
    let text = MARKS.get(m[0]) ?? m[0];
    if (text.length > 1 && LATIN.test(text) && GREEK_OR_CYRILLIC.test(text)) text = [...text].map(latinLookalike).join("");
    words.push({ text, start: m.index, end: m.index + m[0].length });
  }
  return words;
}

/** The instruction-like passages of a text, in order (at most MAX_MATCHES). */
export function findInstructions(text: string): InstructionMatch[] {
  const { text: folded, origin } = fold(text);
  const found: InstructionMatch[] = [];
  const at = (i: number) => (origin === null ? i : i >= origin.length ? text.length : origin[i]!);
  const add = (kind: InstructionKind, start: number, end: number) => {
    if (found.length < MAX_MATCHES) found.push({ kind, start: at(start), end: end >= folded.length ? text.length : at(end) });
  };
  const words = wordsOf(folded);
  for (let i = 0; i < words.length && found.length < MAX_MATCHES; i++) {
    const word = words[i]!.text;
    const end = firstMatch(words, i, BY_FIRST_WORD.get(word)) ?? firstMatch(words, i, BY_FIRST_WORD.get(`${word.slice(0, 2)}*`));
    if (end) add(end.kind, words[i]!.start, words[end.last]!.end);
  }
  for (const rule of CJK_FOLDED) findPhrases(folded, rule, add);
  for (const marker of ROLE_MARKERS) {
    for (let k = folded.indexOf(marker); k >= 0 && found.length < MAX_MATCHES; k = folded.indexOf(marker, k + marker.length)) {
      add("role_marker", k, k + marker.length);
    }
  }
  findTurns(folded, add);
  findToolCalls(folded, add);
  return found.sort((a, b) => a.start - b.start);
}

function firstMatch(words: readonly Word[], i: number, rules: readonly Rule[] | undefined): { kind: InstructionKind; last: number } | null {
  for (const rule of rules ?? []) {
    const last = matchFrom(words, i, rule.slots, 0);
    if (last >= 0) return { kind: rule.kind, last };
  }
  return null;
}

/**
 * The index of the last word of a match of `slots[s…]` whose first slot starts at word `i`, or -1. A slot's gap
 * is at most a few words and a rule has a few slots, so an attempt looks at a bounded number of words.
 */
function matchFrom(words: readonly Word[], i: number, slots: readonly Slot[], s: number): number {
  const slot = slots[s]!;
  for (const alternative of slot.alternatives) {
    if (!alternative.every((w, k) => i + k < words.length && wordMatches(words[i + k]!.text, w))) continue;
    const last = i + alternative.length - 1;
    if (s === slots.length - 1) return last;
    const next = slots[s + 1]!;
    for (let j = last + 1; j <= last + 1 + next.gap && j < words.length; j++) {
      const end = matchFrom(words, j, slots, s + 1);
      if (end >= 0) return end;
    }
  }
  return -1;
}

function wordMatches(word: string, pattern: string): boolean {
  return pattern.endsWith("*") ? word.startsWith(pattern.slice(0, -1)) : word === pattern;
}

function findPhrases(folded: string, rule: PhraseRule, add: (kind: InstructionKind, start: number, end: number) => void): void {
  for (const first of rule.first) {
    for (let k = folded.indexOf(first); k >= 0; k = folded.indexOf(first, k + first.length)) {
      if (!rule.then) {
        add(rule.kind, k, k + first.length);
        continue;
      }
      const window = folded.slice(k + first.length, k + first.length + (rule.window ?? 0) + 4);
      for (const then of rule.then) {
        const at = window.indexOf(then);
        if (at >= 0) {
          add(rule.kind, k, k + first.length + at + then.length);
          break;
        }
      }
    }
  }
}

/** A transcript's turn labels at the start of lines ("Human:" … "Assistant:"). */
function findTurns(folded: string, add: (kind: InstructionKind, start: number, end: number) => void): void {
  const firstAt = (label: string): number => {
    if (folded.startsWith(label)) return 0;
    const k = folded.indexOf(`\n${label}`);
    return k < 0 ? -1 : k + 1;
  };
  for (const [a, b] of TURN_PAIRS) {
    const first = firstAt(a);
    if (first >= 0 && firstAt(b) >= 0) add("role_marker", first, first + a.length);
  }
}

/**
 * JSON shaped like a tool call: a tool-call key (`"tool_calls":`), or an arguments key (`"arguments":`) with a
 * name key (`"name":`) shortly before it and a "{" before that.
 */
function findToolCalls(folded: string, add: (kind: InstructionKind, start: number, end: number) => void): void {
  if (!folded.includes('"')) return;
  for (const key of TOOL_CALL_KEYS) {
    for (let k = folded.indexOf(key); k >= 0; k = folded.indexOf(key, k + key.length)) {
      if (isKey(folded, k + key.length)) add("tool_call", k, k + key.length);
    }
  }
  for (const key of TOOL_ARGUMENT_KEYS) {
    for (let k = folded.indexOf(key); k >= 0; k = folded.indexOf(key, k + key.length)) {
      if (!isKey(folded, k + key.length)) continue;
      const from = Math.max(0, k - TOOL_WINDOW);
      const before = folded.slice(from, k);
      let start = -1;
      for (const name of TOOL_NAME_KEYS) {
        const at = before.lastIndexOf(name);
        if (at >= 0 && isKey(before, at + name.length) && (start < 0 || at < start)) start = at;
      }
      if (start < 0 || !before.slice(0, start).includes("{")) continue;
      add("tool_call", from + start, k + key.length);
    }
  }
}

/** Whether a quoted string ending just before `at` is a key: a ":" follows after blanks. */
function isKey(text: string, at: number): boolean {
  let k = at;
  while (k < text.length && k < at + 8 && (text[k] === " " || text[k] === "\t" || text[k] === "\n")) k++;
  return text[k] === ":";
}
